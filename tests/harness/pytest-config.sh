#!/usr/bin/env bash
# pytest suites named in a config (`pytest:`, `zygote:`) or in a manifest
# (`pytest:`, `zygote:`) run as `--pytest PATH` does, their paths relative
# to the file's folder; bad values are errors naming file:line:column (exit
# 2, before any test runs); `--slots auto` with pytest tests, which report
# no memory peak: the default share, the whole device for slots="all".
. "$(dirname "$0")/lib.sh"

need_pytest_sample
export PYTHONDONTWRITEBYTECODE=1
X=tests/test_softmax.py
P=$T/proj
mkdir -p "$P/configs"

# ids IN: the test ids a run's console printed, sorted.
ids() { grep -oE '^(PASS|FAIL|SKIP|ERROR|CRASH|TIMEOUT) +[^ ]+' "$1" | awk '{print $2}' | sort; }
# starts REPORT: how each test's interpreter started (zygote, fresh), counted.
starts() { grep -A1 'key: pytest_start' "$1" | grep -oE 'value: "?[a-z]+' | sed 's/value: "*//' | sort | uniq -c | tr -s ' ' | sed 's/^ //'; }

# ---- A config under a project's configs/, the suite relative to it ------------------
cat >"$P/configs/gpu.yaml" <<'YAML'
# the sample suite, from this file's folder
pytest: ../../suite
zygote: false
selection: ["tests/test_softmax.py::test_scale[0.5]", "tests/test_softmax.py::TestRows::*"]
YAML
k run --pytest "$S" "$X::test_scale[0.5]" "$X::TestRows::*" --zygote false -o "$T/flags"
expect_rc 0 "the selection with --pytest on the command line"
ids "$T/out.txt" >"$T/flags.ids"
expect_eq "$(wc -l <"$T/flags.ids")" 3 "three tests selected by flags"
cd "$P"
k run -c gpu -o "$T/cfg"
cd "$T"
expect_rc 0 "kiln run -c gpu (pytest: in the config, by profile name)"
ids "$T/out.txt" >"$T/cfg.ids"
if cmp -s "$T/flags.ids" "$T/cfg.ids"; then ok "the config runs the same tests as --pytest"
else fail "the config's run differs"; diff "$T/flags.ids" "$T/cfg.ids"; fi
expect_eq "$(starts "$T/cfg/report.yaml")" "3 fresh" "the config's zygote: false"
# From another folder: the path is the config's, not the working folder's.
mkdir -p "$T/elsewhere"
cd "$T/elsewhere"
k run -c "$P/configs/gpu.yaml" -o "$T/cfg2"
cd "$T"
expect_rc 0 "the config given by path from another folder"
ids "$T/out.txt" >"$T/cfg2.ids"
cmp -s "$T/flags.ids" "$T/cfg2.ids" && ok "the same tests from another folder" \
  || fail "from another folder: $(tr '\n' ' ' <"$T/cfg2.ids")"
# --pytest on the command line replaces the config's suites.
mkdir -p "$T/other/tests"
printf 'def test_other():\n    pass\n' >"$T/other/tests/test_other.py"
printf '[pytest]\n' >"$T/other/pytest.ini"
k list -c "$P/configs/gpu.yaml" --pytest "$T/other" tests/test_other.py::test_other
expect_rc 0 "--pytest over a config's pytest:"
expect_eq "$(grep -c '^tests/' "$T/out.txt")" 1 "only the command line's suite listed"

# kiln bisect runs tests in one shared process: a config's pytest suites are refused.
k bisect -c "$P/configs/gpu.yaml" "$X::test_scale[0.5]" -o "$T/bisect"
expect_rc 2 "kiln bisect with a config's pytest suites"
expect_out "names pytest suites .* cannot share a process" "kiln bisect says why"

# ---- Bad values: file:line:column, exit 2, no test run ------------------------------
bad() {  # bad NAME YAML REGEX WHAT
  printf '%s\n' "$2" >"$P/configs/$1.yaml"
  k run -c "$P/configs/$1.yaml" -o "$T/bad-$1"
  expect_rc 2 "$4"
  expect_out "$3" "$4: named with file:line:column"
  if [ -e "$T/bad-$1" ] || grep -q 'test runs' "$T/out.txt"; then fail "$4: a test ran"
  else ok "$4: no test ran"; fi
}
bad missing $'jobs: 1\npytest: ../nowhere' \
  "configs/missing.yaml:2:9: 'pytest': '../nowhere' \\(from the config's folder: .*/configs/../nowhere\\): No such file or directory" \
  "a pytest path that is not there"
bad mapping $'pytest: {path: ../../suite}' \
  "configs/mapping.yaml:1:9: 'pytest' must be a path \\(a pytest folder or file\\) or a sequence of paths, not a mapping" \
  "pytest: a mapping"
bad item $'pytest:\n  - ../../suite\n  - [tests]' \
  "configs/item.yaml:3:5: 'pytest' must be a path .* not a sequence" \
  "pytest: a list inside the list"
bad empty $'pytest: []' "configs/empty.yaml:1:9: 'pytest' must name at least one path" \
  "pytest: an empty list"
bad zyg $'pytest: ../../suite\nzygote: sometimes' "configs/zyg.yaml:2:9: .*zygote" \
  "zygote: not a boolean"

# ---- A manifest's pytest suites, beside its commands --------------------------------
cat >"$P/tests.yaml" <<'YAML'
suite: cmds
tests:
  - name: true
    command: ["true"]
    needs_gpu: false
pytest: [../suite]
zygote: false
YAML
k run --manifest "$P/tests.yaml" cmds/true "$X::test_scale[0.5]" -o "$T/man"
expect_rc 0 "a manifest with commands and a pytest suite"
expect_out '^PASS +cmds/true ' "the manifest's command ran"
expect_out "^PASS +$X::test_scale\\[0.5\\] " "its pytest suite's test ran"
expect_eq "$(starts "$T/man/report.yaml")" "1 fresh" "the manifest's zygote: false"
printf 'pytest: ../suite\n' >"$P/only.yaml"
k run --manifest "$P/only.yaml" "$X::test_scale[0.5]" -o "$T/man2"
expect_rc 0 "a manifest of a pytest suite alone"
expect_eq "$(starts "$T/man2/report.yaml")" "1 zygote" "the zygote by default"
printf 'tests:\n  - name: t\n    command: ["true"]\npytest: nowhere\n' >"$P/bad.yaml"
k run --manifest "$P/bad.yaml" -o "$T/man3"
expect_rc 2 "a manifest's missing pytest path"
expect_out "/proj/bad.yaml:4:9: 'pytest': 'nowhere' \\(from the manifest's folder: " "named with file:line:column"
[ -e "$T/man3" ] && fail "a test ran" || ok "no test ran"
printf 'suite: x\n' >"$P/none.yaml"
k run --manifest "$P/none.yaml"
expect_rc 2 "a manifest with neither tests nor pytest"
expect_out "none.yaml:1:1: 'tests' must be a non-empty sequence of tests \\(or 'pytest'" "said so"

# ---- --slots auto: pytest tests report no peak ---------------------------------------
# One emulated device of 100 MiB whose memory every process shares: the two
# test_big_buffer tests hold 60 MiB each (slots="all"), test_scale the
# default share; with no report of peaks every one runs, never the two big
# ones together.
export KILN_EMU_STATE_DIR=$T/emu KILN_EMU_MEMORY_MB=100 SAMPLE_HOLD_S=1.5
mkdir -p "$KILN_EMU_STATE_DIR"
k run --pytest "$S" --slots auto -j 3 "$X::test_big_buffer[1]" "$X::test_big_buffer[2]" \
  "$X::test_scale[0.5]" "$X::test_scale[2.0]" -o "$T/auto"
expect_rc 0 "--slots auto with pytest tests"
expect_out 'slots auto: 0 of 4 tests have a peak' "no pytest test has a peak"
expect_out '4 test runs .* 4 pass' "every test passed, the big ones apart"
flat "$T/auto/report.yaml"
expect_eq "$(field devices.0.slots)" 100 "the device's 100 slots"
# slots ID: the slots the report says a test took; start/end ID: its times.
tf() { awk -v id="$1" -v k="$2" -F= '$1 ~ /^tests\.[0-9]+\.id$/ { split($1, a, "."); i = a[2]; if ($2 == id) want = i }
  want != "" && $1 == "tests." want "." k { print substr($0, index($0, "=") + 1); exit }' "$T/flat.txt"; }
expect_eq "$(tf "$X::test_scale[0.5]" slots)" 33 "a test with no peak: one default share (1 of -j 3)"
expect_eq "$(tf "$X::test_big_buffer[1]" slots)" 100 "slots=\"all\": the whole device"
expect_eq "$(tf "$X::test_big_buffer[2]" slots)" 100 "slots=\"all\": the whole device (2)"
b1s=$(tf "$X::test_big_buffer[1]" started) b1e=$(tf "$X::test_big_buffer[1]" ended)
b2s=$(tf "$X::test_big_buffer[2]" started) b2e=$(tf "$X::test_big_buffer[2]" ended)
if [[ ! "$b2s" < "$b1e" || ! "$b1s" < "$b2e" ]]; then ok "the two whole-device tests never together"
else fail "the whole-device tests overlapped: $b1s..$b1e and $b2s..$b2e"; fi
expect_tokens_full "after --slots auto"
finish
