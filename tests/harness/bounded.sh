#!/usr/bin/env bash
# Every reader of outside input is bounded: nesting depth, aliases and size,
# with an error at file:line:column, in seconds whatever the input. Configs,
# CTest resource specs, reports, journals, CTest's environment.
. "$(dirname "$0")/lib.sh"

# timed WHAT CMD...: runs kiln with a 20 s limit; sets $rc and $took (ms).
timed() {
  local what=$1; shift
  local t0=$(date +%s%N)
  timeout 20 "$KILN" "$@" >"$T/out.txt" 2>&1; rc=$?
  took=$(( ($(date +%s%N) - t0) / 1000000 ))
  [ "$took" -lt 5000 ] && ok "$what: answered in $took ms" || fail "$what: took $took ms (rc $rc)"
}

# A config of nested lists: 400 KB (its time grew with the square of the
# depth: minutes).
python3 -c "print('selection: ' + '[' * 200000 + ']' * 200000)" >"$T/deep.yaml"
timed "deeply nested config" list --backend host --config "$T/deep.yaml"
expect_rc 2 "deeply nested config refused"
expect_out "deep.yaml:1:[0-9]+: .*nest" "the error names file:line:column and the nesting"
python3 -c "print('selection: ' + '{a: ' * 100000 + '1' + '}' * 100000)" >"$T/deepmap.yaml"
timed "deeply nested mappings" list --backend host --config "$T/deepmap.yaml"
expect_rc 2 "deeply nested mappings refused"

# Aliases: a billion laughs, and a plain alias (kiln's files need none).
python3 - "$T/laughs.yaml" <<'PY'
import sys
lines = ['a0: &a0 [x, x, x, x, x, x, x, x, x, x]']
for i in range(1, 30):
    lines.append(f'a{i}: &a{i} [' + ', '.join([f'*a{i-1}'] * 10) + ']')
lines.append('selection: *a29')
open(sys.argv[1], 'w').write('\n'.join(lines) + '\n')
PY
timed "alias bomb config" list --backend host --config "$T/laughs.yaml"
expect_rc 2 "alias bomb refused"
expect_out 'laughs.yaml:2:[0-9]+: .*alias' "the first alias is named with its position"
printf 'x: &sel [faults/pass]\nselection: *sel\n' >"$T/alias.yaml"
timed "an alias" list --backend host --config "$T/alias.yaml"
expect_rc 2 "an alias refused"

# Size: over 1 MiB.
python3 -c "print('# ' + 'x' * (1 << 20))" >"$T/big.yaml"
timed "a 1 MiB config" list --backend host --config "$T/big.yaml"
expect_rc 2 "a config over 1 MiB refused"
expect_out 'big.yaml: .*1 MiB' "says the limit"

# A resource spec nested deeper than CTest reads (1000 levels).
python3 -c "print('{\"version\":{\"major\":1,\"minor\":0},\"local\":[],\"x\":' + '[' * 200000 + ']' * 200000 + '}')" >"$T/deep.json"
timed "deeply nested resource spec" list --backend host --resource-spec "$T/deep.json" faults/pass
expect_rc 2 "deeply nested resource spec refused"
expect_out 'deep.json:1:[0-9]+: .*nest' "file:line:column"

# A report: nesting in a key kiln does not know, and an alias bomb.
k run --backend host -o "$T/run" faults/pass
python3 - "$T/run/report.yaml" "$T/deep-report.yaml" <<'PY'
import sys
s = open(sys.argv[1]).read().rstrip().rstrip('.').rstrip()
open(sys.argv[2], 'w').write(s + '\nx_extra: ' + '[' * 200000 + ']' * 200000 + '\n')
PY
timed "deeply nested report" report show "$T/deep-report.yaml"
expect_rc 2 "deeply nested report refused"
expect_out 'deep-report.yaml:[0-9]+:[0-9]+: .*nest' "file:line:column"
python3 - "$T/run/report.yaml" "$T/laughs-report.yaml" <<'PY'
import sys
s = open(sys.argv[1]).read().rstrip().rstrip('.').rstrip()
extra = ['x0: &a0 [x, x, x, x, x, x, x, x, x, x]']
for i in range(1, 30):
    extra.append(f'x{i}: &a{i} [' + ', '.join([f'*a{i-1}'] * 10) + ']')
open(sys.argv[2], 'w').write(s + '\n' + '\n'.join(extra) + '\n')
PY
timed "alias bomb in a report" report show "$T/laughs-report.yaml"
expect_rc 2 "alias bomb in a report refused"
expect_out 'laughs-report.yaml:[0-9]+:[0-9]+: .*alias' "file:line:column"

# A journal with an endless line.
cp -r "$T/run" "$T/jrun" && rm -f "$T/jrun/report.yaml"
python3 -c "import sys; sys.stdout.write('rec note key=x value=' + 'y' * (8 << 20) + '\n')" >>"$T/jrun/journal"
timed "a journal line of 8 MB" report rebuild "$T/jrun"
expect_rc 2 "an over-long journal line refused"
expect_out 'journal:[0-9]+: .*longer than' "names the line"

# CTest's variables.
CTEST_RESOURCE_GROUP_COUNT=99999999999 timed "CTEST_RESOURCE_GROUP_COUNT huge" list --backend host faults/pass
expect_rc 2 "a huge group count refused"
expect_out 'CTEST_RESOURCE_GROUP_COUNT' "names the variable"
CTEST_RESOURCE_GROUP_COUNT=1 CTEST_RESOURCE_GROUP_0=gpus \
  CTEST_RESOURCE_GROUP_0_GPUS="$(python3 -c "print(';'.join(['id:0,slots:1'] * 9000))")" \
  timed "a long CTEST_RESOURCE_GROUP_0_GPUS" list --backend host faults/pass
expect_match "$rc" '^[02]$' "a long allotment is read or refused, quickly"
finish
