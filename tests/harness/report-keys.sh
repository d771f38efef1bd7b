#!/usr/bin/env bash
# The keys reports/README.md documents and the keys kiln writes, both ways
# (report-keys.py): reports of kiln's own tests, of faults that leak and
# leave state behind, of a worker (a polluted test confirmed alone), of a
# GoogleTest binary and a manifest, of two shards
# (one ordered by the first run's times), and their merge. KILN_README names another README (to see this fail).
. "$(dirname "$0")/lib.sh"
need_pyyaml
export KILN_EMU_DEVICES=2
k run --backend host -j 2 -o "$T/own" engine rope
k run --backend host -j 2 -o "$T/faults" faults/leak faults/pollution_writer faults/pollution_reader
k run --backend host -j 1 --isolation worker -o "$T/workers" faults/skip faults/flaky_once
[ -n "${KILN_GTEST:-}" ] &&
  k run --backend host -j 2 -o "$T/third" --gtest "$KILN_GTEST" --manifest "$KILN_MANIFEST" -- \
    'Zeros/*' 'Arith.FailsOnPurpose' 'Skip.NoDevice' pysuite/passes pysuite/skips
k run --backend host -j 2 -o "$T/s1" --shard 1/2 engine
k run --backend host -j 2 -o "$T/s2" --shard 2/2 --durations "$T/own" engine
k report merge -o "$T/merged.yaml" "$T/s1/report.yaml" "$T/s2/report.yaml"
expect_rc 0 "kiln report merge of two shards"
reports=()
for r in "$T"/*/report.yaml "$T/merged.yaml"; do [ -f "$r" ] && reports+=("$r"); done
expect_match "${#reports[@]}" '^[67]$' "the reports to compare were written"
python3 "$KILN_SOURCE/tests/harness/report-keys.py" "$KILN_SOURCE" \
  "${KILN_README:-$KILN_SOURCE/reports/README.md}" "${reports[@]}" >"$T/keys.txt" 2>&1
rc=$?
cat "$T/keys.txt"
expect_eq "$rc" 0 "every key kiln writes is documented, and every documented key is one kiln writes"
finish
