#!/usr/bin/env bash
# kiln's command line: selection (suite, id, glob, @tag, exclusions, the
# fault rule), `kiln list`, --help/--version, and bad input of every kind
# (unknown selector, bad flag values, malformed configs, resource specs):
# exit 2 with a message naming the value and, for files, line and column.
. "$(dirname "$0")/lib.sh"

# ---- kiln list and selectors ----
k list;                        expect_rc 0 "list"
expect_out '^softmax/sizes_f32 ' "list shows softmax tests"
if grep -q '^faults/' "$T/out.txt"; then fail "fault tests listed without being named"; else ok "fault tests hidden by default"; fi
k list faults;                 expect_rc 0 "list faults"
# (faults/flood, tag slow, is held back on the host backend, as by kiln run.)
expect_eq "$(grep -c '^faults/' "$T/out.txt")" 39 "fault tests listed by suite"
k list softmax/causal;         expect_eq "$(wc -l <"$T/out.txt")" 1 "an id selects one test"
k list 'softmax/sizes_f*';     expect_eq "$(grep -c '^softmax/sizes_f' "$T/out.txt")" 2 "a glob selects sizes_f32 and sizes_f16"
k list 'faults/pollution_*'; expect_eq "$(cut -d" " -f1 "$T/out.txt" | tr "\n" " ")" "faults/pollution_writer faults/pollution_reader " "a glob under the fault suite selects fault tests"
k list @fault;                 expect_eq "$(grep -c "^faults/" "$T/out.txt")" 39 "@fault selects the fault suite"
k list softmax -@slow;         rc2=$(grep -c sizes_large "$T/out.txt"); expect_eq "$rc2" 0 "-@slow excludes the slow test"
k list -- faults -faults/pass; if grep -q '^faults/pass ' "$T/out.txt"; then fail "-suite/test did not exclude"; else ok "-suite/test excludes after --"; fi
k list '*';                    if grep -q '^faults/' "$T/out.txt"; then fail "'*' swept up fault tests"; else ok "a bare glob does not select fault tests"; fi
k list nosuchsuite;            expect_rc 2 "unknown selector"; expect_out "selector 'nosuchsuite' matches no test" "the error names the selector"
k list -@nosuchtag;            expect_rc 2 "unknown exclusion"
k run --backend host nosuch/test; expect_rc 2 "kiln run with an unknown selector"

# ---- help and version (each command's own help: help.sh) ----
k run --help;                  expect_rc 0 "run --help"
for f in jobs backend config report out timeout grace retries repeat isolation wrap poison seed slots resource-spec token-key leaks tolerance verbose; do
  grep -q -- "--$f" "$T/out.txt" || fail "kiln run --help does not mention --$f"
done
ok "kiln run --help lists every flag of kiln run"
k --help;                      expect_rc 0 "--help"
for c in run list devices "report show" "report merge" bench help; do
  grep -q -- "^  $c " "$T/out.txt" || fail "kiln --help does not list $c"
done
ok "kiln --help lists the commands"
k --version;                   expect_rc 0 "--version"; expect_out '^kiln [0-9]' "version line"
k;                             expect_rc 2 "no command"
k frobnicate;                  expect_rc 2 "unknown command"

# ---- bad flag values ----
k run --jobs abc faults/pass;          expect_rc 2 "--jobs abc"; expect_out "jobs: 'abc' is not valid: expected an integer from 1 to 1024" "--jobs error names value and range"
k run --timeout -1 faults/pass;        expect_rc 2 "--timeout -1"
k run --timeout 1e9 faults/pass;       expect_rc 2 "--timeout huge"
k run --isolation thread faults/pass;  expect_rc 2 "--isolation thread"; expect_out "one of process, none" "isolation error lists the choices"
k run --backend tpu faults/pass;       expect_rc 2 "--backend tpu"
k run --tolerance 'x=1' faults/pass;   expect_rc 2 "--tolerance without rtol"
k run --frob faults/pass;              expect_rc 2 "unknown option"
k run --jobs;                          expect_rc 2 "missing flag value"
k run --wrap 'unbalanced "quote' --backend host faults/pass; expect_rc 2 "--wrap that cannot be split"

# ---- configs ----
cfg() { printf '%s\n' "$@" >"$T/c.yaml"; k list --config "$T/c.yaml" faults/pass; }
cfg 'jobs: 2' 'isolation: none';       expect_rc 0 "a good config"
cfg 'jobs: 2' 'jobz: 3';               expect_rc 2 "unknown key"; expect_out "c.yaml:2:1: unknown key 'jobz'" "unknown key: file:line:column"
cfg 'jobs: [1, 2]';                    expect_rc 2 "wrong type";  expect_out "c.yaml:1:7: 'jobs' must be an integer from 1 to 1024, not a sequence" "wrong type: file:line:column"
cfg 'jobs: "4"';                       expect_rc 2 "quoted number"; expect_out 'c.yaml:1:7: .*quoted string' "a quoted number is a string"
cfg 'timeout: -5';                     expect_rc 2 "negative timeout"; expect_out "c.yaml:1:10: timeout: '-5' is not valid" "negative timeout: line:column"
cfg 'jobs: 99999999999999999999';      expect_rc 2 "huge number"
cfg 'retries: lots';                   expect_rc 2 "non-numeric"
cfg 'poison: maybe';                   expect_rc 2 "bad boolean"
cfg 'jobs: 2' '  - oops: [';           expect_rc 2 "malformed YAML"; expect_out 'c.yaml:[0-9]+:[0-9]+: malformed YAML' "malformed YAML: line:column"
cfg 'tolerances:' '  - {match: "a*", atol: 1}'; expect_rc 2 "tolerance without rtol"; expect_out 'c.yaml:2:5: a tolerance needs match, atol and rtol' "incomplete tolerance: line:column"
cfg 'tolerances:' '  - {match: "a*", atol: 1, rtol: 2, btol: 3}'; expect_rc 2 "tolerance unknown key"
cfg 'selection: faults/pass';          expect_rc 2 "selection must be a list"
cfg 'jobs: 1' 'jobs: 2';               expect_rc 2 "duplicate key"
cfg 'grace: 1e999';                    expect_rc 2 "huge double"; expect_out 'c.yaml:1:8: ' "huge double: line:column"
cfg 'jobs: 99999999999999999999';      expect_out "c.yaml:1:7: jobs: '99999999999999999999' is not valid" "huge number: line:column and the value"
cfg 'grace: -1';                       expect_rc 2 "negative grace"
printf 'selection: [nosuchsuite]\n' >"$T/c.yaml"; k list --config "$T/c.yaml"; expect_rc 2 "a config selecting nothing"; expect_out "selector 'nosuchsuite' matches no test" "the config's selector is named"
cfg 'devices:' '  - {id: 0, slots: 0}'; expect_rc 2 "device with 0 slots"; expect_out 'c.yaml:2:' "bad device entry: line"
printf 'jobs: 2\n\tretries: 1\n' >"$T/c.yaml"; k list --config "$T/c.yaml" faults/pass; expect_rc 2 "a tab in YAML"; expect_out 'c.yaml:2:[0-9]+: malformed YAML' "tab: line:column"
head -c 512 /dev/urandom >"$T/c.yaml"; printf '\0x: [' >>"$T/c.yaml"; k list --config "$T/c.yaml" faults/pass; expect_rc 2 "binary garbage as a config"
cfg '- 1';                             expect_rc 2 "a config that is not a mapping"
k list --config nosuchprofile;         expect_rc 2 "missing config"
for p in default quick nightly ci; do
  k list --config "$KILN_SOURCE/configs/$p.yaml"; expect_rc 0 "configs/$p.yaml parses and selects"
done
k list --config "$KILN_SOURCE/configs/quick.yaml"
if grep -q sizes_large "$T/out.txt"; then fail "quick profile includes slow tests"; else ok "quick profile is a smoke subset"; fi
k list --config "$KILN_SOURCE/configs/quick.yaml" faults/pass; expect_eq "$(wc -l <"$T/out.txt")" 1 "command-line selectors override the config's"

# ---- CTest resource spec ----
spec() { printf '%s\n' "$@" >"$T/spec.json"; k devices --backend host --resource-spec "$T/spec.json"; }
spec '{"version":{"major":1,"minor":0},"local":[{"gpus":[{"id":"0","slots":3}]}]}'
expect_rc 0 "a good resource spec"; expect_out 'slots 3 total, 3 free' "resource-spec slots reach the token set"
spec '{"version":{"major":1,"minor":0},' '"local":[{"gpus":[{"id":"0","slots":"x"}]}]}'
expect_rc 2 "bad slots in resource spec"; expect_out 'spec.json:2:' "resource-spec error names line and column"
spec '{"version":{"major":2,"minor":0},"local":[]}'; expect_rc 2 "resource spec major version 2"
spec '{"version":{"major":1,"minor":0},"local":[{"gpus":[{"id":"0","slots":-2}]}]}'; expect_rc 2 "negative slots in resource spec"; expect_out 'spec.json:1:[0-9]+: "slots" must be an unsigned' "negative slots: line:column"
# What CTest accepts, kiln accepts (tests/harness/ctest.sh has the corpus):
# slots up to 2^32-1 (kiln uses at most 1024), any id of a-z0-9_ (one that
# is no device index gets no tests), text after the JSON.
spec '{"version":{"major":1,"minor":0},"local":[{"gpus":[{"id":"0","slots":2222222220}]}]}'; expect_rc 0 "slots beyond int in resource spec, as CTest"; expect_out 'slots 1024 total' "kiln uses at most 1024"
spec '{"version":{"major":1,"minor":0},"local":[{"gpus":[{"id":"99","slots":1}]}]}'; expect_rc 0 "a device id kiln does not know, as CTest"
spec '{"version":{"major":1,"minor":0},' '  "local":[{"gpus":[{"id":"0" "slots":1}]}]}'; expect_rc 2 "malformed JSON"; expect_out 'spec.json:2:[0-9]+: ' "malformed JSON: line:column"
k devices --backend host --resource-spec "$T/nosuch.json"; expect_rc 2 "missing resource spec"; expect_out 'nosuch.json' "missing resource spec: names the file"
spec '{"version":{"major":1,"minor":0},"local":[{"gpus":[{"id":"0","slots":1}]}]} x'; expect_rc 0 "text after the JSON, as CTest"
spec '{"version":{"major":1,"minor":1},"local":[]}'; expect_rc 2 "minor version 1, as CTest"
finish
