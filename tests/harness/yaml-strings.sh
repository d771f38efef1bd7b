#!/usr/bin/env bash
# Every string a report holds comes back from PyYAML (YAML 1.1 rules) as
# the same string, every number as a number: a run whose git revision,
# config path, run folder, token key, device list, notes (faults/
# yaml_strings: yes, 1:30, 0x1F, 2001-12-14, ~, ...) and output are all
# strings YAML would misread; the same for the report rebuilt from its
# journal, a merged report, a diff's YAML and bench.yaml. Skips (77)
# without PyYAML unless KILN_REQUIRE_PYYAML=1.
. "$(dirname "$0")/lib.sh"

if ! python3 -c 'import yaml' 2>/dev/null; then
  echo "PyYAML not installed (scripts/install-deps.sh installs python3-yaml)"
  [ "${KILN_REQUIRE_PYYAML:-0}" = 1 ] && exit 1
  exit 77
fi
check() { python3 "$(dirname "$0")/yaml-check.py" "$@"; }

# Names YAML 1.1 reads as an integer (1:30 = 90), a hex integer and a date,
# in the run's own fields first, then in test notes too.
printf 'jobs: 2\n' >"$T/1:30"
printf '%s' '{"version":{"major":1,"minor":0},"local":[{"gpus":[{"id":"1","slots":2}]}]}' >"$T/spec.json"
KILN_GIT_REV=1:30 KILN_EMU_DEVICES=2 k run --backend host --config 1:30 --out 0o17 \
  --token-key 0x1F --resource-spec "$T/spec.json" --wrap "env X=yes" faults/pass faults/leak
expect_rc 1 "a run with a leak"
check report 0o17/report.yaml kiln.git=1:30 run.config=1:30 run.out=0o17 run.token_key=0x1F \
  settings.devices=1:2 "settings.wrap=env X=yes" &&
  ok "report.yaml: the run's strings are strings to PyYAML" || fail "report.yaml: the run's strings"
KILN_GIT_REV=1:30 KILN_EMU_DEVICES=2 k run --backend host --config 1:30 --out 2001-12-14 \
  --token-key 0x1F --resource-spec "$T/spec.json" --wrap "env X=yes" \
  faults/yaml_strings faults/fail_assert faults/leak faults/pass
expect_rc 1 "a run of hostile strings (one failing test)"
flat 2001-12-14/report.yaml
expect_eq "$(grep '^tests\.[0-9]*\.notes\.[0-9]*\.key=' "$T/flat.txt" | grep -vc '=kept_test_tmpdir$')" 54 "every hostile string sent as a note (besides the failed tests' kept folders)"
check report 2001-12-14/report.yaml kiln.git=1:30 run.config=1:30 run.out=2001-12-14 \
  run.token_key=0x1F settings.devices=1:2 "settings.wrap=env X=yes"
[ $? -eq 0 ] && ok "report.yaml: every string field is a string to PyYAML" || fail "report.yaml strings"
KILN_EMU_DEVICES=2 k report rebuild 2001-12-14 --report "$T/rebuilt.yaml"
expect_rc 0 "report rebuild"
check report "$T/rebuilt.yaml" kiln.git=1:30 settings.devices=1:2 &&
  ok "the rebuilt report: the same" || fail "rebuilt report strings"
k report merge 2001-12-14 -o "$T/merged.yaml"
expect_rc 0 "report merge"
check report "$T/merged.yaml" kiln.git=1:30 run.merged_from.0.git=1:30 &&
  ok "the merged report: the same" || fail "merged report strings"
k report diff 2001-12-14 2001-12-14 --yaml "$T/diff.yaml"
check diff "$T/diff.yaml" base.git=1:30 new.path=2001-12-14/report.yaml &&
  ok "diff YAML: the same" || fail "diff YAML strings"
KILN_GIT_REV=1:30 k bench --backend host --tests 2 --concurrency 1 --host-tests 4 --rss-tests 2,3 --out "$T/b"
expect_rc 0 "kiln bench"
check bench "$T/b/bench.yaml" git=1:30 && ok "bench.yaml: the same" || fail "bench.yaml strings"
finish
