#!/usr/bin/env bash
# Every subcommand's --help is its own, from the one command table: it
# names its command, differs from every other command's, equals `kiln help
# CMD`, and lists exactly the options the command takes (an option another
# command lists is refused here with exit 2). `kiln help` lists every
# command; usage errors name the command and exit 2; `kiln report merge`
# writes to stdout without -o.
. "$(dirname "$0")/lib.sh"

cmds=(run list devices "report show" "report rebuild" "report junit" "report diff"
      "report merge" "report html" slurm bisect bench help)
k help;  expect_rc 0 "kiln help"
cp "$T/out.txt" "$T/overview.txt"
for c in "${cmds[@]}"; do
  grep -q "^  $c " "$T/overview.txt" || fail "kiln help does not list '$c'"
done
expect_eq "$(grep -c '^  [a-z]' "$T/overview.txt")" "${#cmds[@]}" "kiln help lists every command, and only those"
k --help; cmp -s "$T/out.txt" "$T/overview.txt" && ok "kiln --help = kiln help" || fail "kiln --help differs"

# Each command's help: its own usage line, its own options.
declare -A opts
for c in "${cmds[@]}"; do
  f=$T/help-${c// /-}.txt
  "$KILN" $c --help >"$f" 2>&1; rc=$?
  expect_rc 0 "kiln $c --help"
  expect_eq "$(head -1 "$f" | cut -d' ' -f1-$((2 + $(wc -w <<<"$c"))))" "usage: kiln $c" "kiln $c --help names its command"
  "$KILN" help $c >"$T/h2.txt" 2>&1
  cmp -s "$f" "$T/h2.txt" && ok "kiln help $c = kiln $c --help" || fail "kiln help $c differs from kiln $c --help"
  opts[$c]=$(grep -oE '^ +(-[a-z], )?--[a-z-]+' "$f" | sed 's/.*--//' | sort -u | tr '\n' ' ')
done
for a in "${cmds[@]}"; do
  for b in "${cmds[@]}"; do
    [ "$a" \< "$b" ] || continue
    cmp -s "$T/help-${a// /-}.txt" "$T/help-${b// /-}.txt" && fail "kiln $a --help = kiln $b --help"
  done
done
ok "no two commands share a help text"
# The ones that printed kiln run's help before. (kiln list takes every
# option of kiln run, so that it lists what the same run would run.)
for c in devices "report show" "report rebuild"; do
  for o in wrap retries isolation junit; do
    grep -q -- "--$o" "$T/help-${c// /-}.txt" && fail "kiln $c --help lists --$o, an option of kiln run"
  done
done
ok "devices, report show and report rebuild do not show kiln run's options"
expect_eq "$(echo "${opts[list]}" | tr ' ' '\n' | grep -vx format | paste -sd' ')" \
  "$(echo "${opts[run]}" | tr ' ' '\n' | paste -sd' ')" "kiln list takes exactly kiln run's options (and --format)"
grep -q -- '-o, --out FILE .*default: stdout' "$T/help-report-merge.txt" &&
  ok "report merge: -o is optional (stdout by default)" || fail "report merge --help on -o"
grep -Eq '^usage: kiln report merge \[OPTIONS\] REPORT\.\.\.$' "$T/help-report-merge.txt" &&
  ok "report merge: usage line" || fail "report merge usage: $(head -1 "$T/help-report-merge.txt")"

# An option another command lists is refused by a command that does not.
# (--help after it: a command that took the option would only print help.)
for c in "${cmds[@]}"; do
  [ "$c" = help ] && continue
  for o in $(printf '%s\n' "${opts[@]}" | tr ' ' '\n' | sort -u); do
    [ "$o" = help ] && continue
    case " ${opts[$c]} " in *" $o "*) continue;; esac
    "$KILN" $c --$o x --help >"$T/u.txt" 2>&1; rc=$?
    if [ "$rc" != 2 ] || ! grep -q "kiln $c: unknown option '--$o'" "$T/u.txt"; then
      fail "kiln $c --$o: exit $rc: $(head -1 "$T/u.txt")"
    fi
  done
done
ok "each command refuses the options it does not list (exit 2, naming them)"

# Usage errors: exit 2, naming the command and its usage.
k report diff only-one;        expect_rc 2 "report diff with one report"
expect_out "^kiln report diff: needs BASE NEW" "names what is missing"; expect_out "^usage: kiln report diff" "and the usage"
k devices extra;               expect_rc 2 "devices with a word"
k report;                      expect_rc 2 "report without a command"
expect_out "report show" "lists the report commands"
k report frob;                 expect_rc 2 "an unknown report command"
k report --help;               expect_rc 0 "report --help"
expect_out "^  report merge " "lists the report commands"
k help nosuch;                 expect_rc 2 "help of an unknown command"
k devices --jobs 2;            expect_rc 2 "devices does not take --jobs"
k bench --tests;               expect_rc 2 "a missing value"
expect_out "^kiln bench: --tests needs a value" "names the option"

# merge without -o: the merged report on stdout.
k run --backend host -o "$T/r" faults/pass
"$KILN" report merge "$T/r" >"$T/m.yaml" 2>"$T/m.err"; rc=$?
expect_rc 0 "report merge without -o"
flat "$T/m.yaml"
expect_eq "$(tfield faults/pass outcome)" pass "the merged report came out on stdout"
finish
