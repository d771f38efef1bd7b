#!/usr/bin/env bash
# The kernel settings of the environment reach the engine through the
# runner (harness/child/tuning.c), not through the launchers: under kiln,
# attention_tiled/tuning_knobs notes the attention tuning its context was
# opened with. Unset: the defaults; KILN_HOPPER_ATTN=0 and KILN_FA3_V16=1
# or 0: their values; any other value: the defaults, as before the move.
. "$(dirname "$0")/lib.sh"

run_with() {  # run_with WHAT [env ARGS...]: sets $got, the note of a fresh run
  local what=$1; shift
  rm -rf "$T/run"
  env "$@" "$KILN" run --backend host -j 1 -o "$T/run" attention_tiled/tuning_knobs \
    >"$T/out.txt" 2>&1
  rc=$?
  expect_rc 0 "$what"
  flat "$T/run/report.yaml"
  got=$(note attention_tiled/tuning_knobs attention_tuning)
}

run_with "unset" -u KILN_HOPPER_ATTN -u KILN_FA3_V16
expect_eq "$got" "hopper=1 v16=-1" "no setting: the defaults"
run_with "off, always" KILN_HOPPER_ATTN=0 KILN_FA3_V16=1
expect_eq "$got" "hopper=0 v16=1" "KILN_HOPPER_ATTN=0 KILN_FA3_V16=1"
run_with "never" -u KILN_HOPPER_ATTN KILN_FA3_V16=0
expect_eq "$got" "hopper=1 v16=0" "KILN_FA3_V16=0"
run_with "other values" KILN_HOPPER_ATTN=no KILN_FA3_V16=2
expect_eq "$got" "hopper=1 v16=-1" "other values: the defaults"
finish
