#!/usr/bin/env bash
# Only a whole report is read: one cut at a line boundary (a third of it,
# its last 5 bytes, its closing "..."), or whose summary counts other runs
# than it lists, is refused by every reader (show, diff, junit, html, merge)
# with a message that says so, never read as a run of fewer tests. A
# journal of a format this kiln does not know, or with a damaged line
# before its end, is refused by `kiln report rebuild`; one torn at its last
# line (kiln killed mid-write) still rebuilds. A report that disagrees
# with itself (a summary that counts other outcomes than its tests, a
# not_run count in a run that was not interrupted, one test run listed
# twice) is refused by every reader, naming the inconsistency. A journal
# that two runs wrote (two headers), or whose test runs' lines are
# interleaved, is refused by rebuild, never merged into one run.
. "$(dirname "$0")/lib.sh"

# One at a time, so that the journal holds the runs in the selection's
# order (the interleave edit below moves faults/skip into faults/pass's).
k run --backend host -j 1 -o "$T/good" faults/pass faults/fail_assert faults/skip
expect_rc 1 "a run with a failure"
R=$T/good/report.yaml
n=$(wc -l <"$R")
mkdir -p "$T/cuts"
head -n $((n / 3)) "$R" >"$T/cuts/third.yaml"
head -c -5 "$R" >"$T/cuts/last5.yaml"
head -n -1 "$R" >"$T/cuts/nodots.yaml"
sed -E 's/^  runs: [0-9]+$/  runs: 2/' "$R" >"$T/cuts/count.yaml"
grep -q '^  runs: 2$' "$T/cuts/count.yaml" || fail "the count edit did not apply"

for c in third last5 nodots count; do
  f=$T/cuts/$c.yaml
  k report show "$f"
  expect_rc 2 "report show of a report cut ($c)"
  expect_out 'not whole' "report show ($c) says the report is not whole"
  k report diff "$R" "$f"
  expect_rc 2 "report diff good $c"
  expect_out 'not whole' "report diff ($c) says why"
  k report junit "$f" -o "$T/j.xml"
  expect_rc 2 "report junit of $c"
  k report html "$f" -o "$T/r.html"
  expect_rc 2 "report html of $c"
  k report merge "$R" "$f" -o "$T/m.yaml" --force
  expect_rc 2 "report merge with $c"
  expect_out 'not whole' "report merge ($c) says why"
done
# Reports that disagree with themselves.
mkdir -p "$T/bad"
awk '/^  outcome: fail$/ { print "  outcome: pass"; next } { print }' "$R" >"$T/bad/flipped.yaml"
sed -E 's/^  not_run: 0$/  not_run: 3/' "$R" >"$T/bad/notrun.yaml"
# faults/pass listed twice, the summary counting both.
python3 - "$R" "$T/bad/twice.yaml" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
i = lines.index("- id: faults/pass")
end = next(k for k in range(i + 1, len(lines)) if not lines[k].startswith(" "))
lines[end:end] = lines[i:end]
out = "\n".join(lines)
for key in ("total", "runs", "pass"):
    out = re.sub(r"(?m)^  %s: (\d+)$" % key, lambda m: "  %s: %d" % (key, int(m.group(1)) + 1),
                 out, count=1)
open(sys.argv[2], "w").write(out)
PY
[ "$(grep -c '^- id: faults/pass$' "$T/bad/twice.yaml")" = 2 ] || fail "the duplicate edit did not apply"
grep -q '^  outcome: fail$' "$T/bad/flipped.yaml" && fail "the flip did not apply"
grep -q '^  not_run: 3$' "$T/bad/notrun.yaml" || fail "the not_run edit did not apply"
declare -A why=([flipped]='summary says pass: 1, fail: 1, but its tests list pass: 2, fail: 0' [notrun]='not_run: 3 .* not interrupted'
  [twice]='faults/pass \(repeat 1, attempt 1\) twice')
for c in flipped notrun twice; do
  f=$T/bad/$c.yaml
  k report show "$f"
  expect_rc 2 "report show of a report that disagrees with itself ($c)"
  expect_out "${why[$c]}" "report show ($c) names the inconsistency"
  k report junit "$f" -o "$T/j.xml"
  expect_rc 2 "report junit of $c"
  expect_out "${why[$c]}" "report junit ($c) names it"
  k report diff "$R" "$f"
  expect_rc 2 "report diff good $c"
  expect_out "${why[$c]}" "report diff ($c) names it"
  k report merge "$f" -o "$T/m.yaml" --force
  expect_rc 2 "report merge of $c"
  expect_out "${why[$c]}" "report merge ($c) names it"
done

# The whole report still reads, and one cut only by its last newline (the
# whole text is there) too.
k report show "$R"
expect_rc 0 "report show of the whole report"
head -c -1 "$R" >"$T/cuts/nl.yaml"
k report show "$T/cuts/nl.yaml"
expect_rc 0 "report show of a report missing only its last newline"

# Journals.
J=$T/good/journal
mkdir -p "$T/f99" "$T/torn" "$T/dmg"
sed -E '1s/ format=[0-9]+/ format=99/' "$J" >"$T/f99/journal"
grep -q 'format=99' "$T/f99/journal" || fail "the format edit did not apply"
k report rebuild "$T/f99"
expect_rc 2 "report rebuild of a journal with format=99"
expect_out 'journal format 99; this kiln reads' "rebuild names the format"
[ -e "$T/f99/report.yaml" ] && fail "a report was written from a format-99 journal"

# A line damaged in the middle (not the torn last line of a kill).
awk 'NR == 4 { print "\001\002 garbage"; next } { print }' "$J" >"$T/dmg/journal"
k report rebuild "$T/dmg"
expect_rc 2 "report rebuild of a journal damaged at line 4"
expect_out 'journal:4: damaged' "rebuild names the damaged line"

# Torn by a kill: the last line has no newline. It rebuilds.
head -c -7 "$J" >"$T/torn/journal"
k report rebuild "$T/torn"
expect_rc 0 "report rebuild of a journal torn at its last line"
flat "$T/torn/report.yaml"
expect_eq "$(field run.rebuilt_from_journal)" true "the torn journal rebuilt"

# Two runs in one journal (two headers), and one run's lines interleaved:
# faults/skip's `run` record moved to just after faults/pass's, as two
# writers would leave it.
k run --backend host -o "$T/other" faults/skip
mkdir -p "$T/two" "$T/mixed"
cat "$J" "$T/other/journal" >"$T/two/journal"
k report rebuild "$T/two"
expect_rc 2 "report rebuild of a journal with two runs' headers"
expect_out 'journal:[0-9]+: a second `kiln` header' "rebuild says two runs wrote it"
[ -e "$T/two/report.yaml" ] && fail "a report was written from a journal of two runs"
awk '/^run .*id=faults\/skip / { next } { print } /^run .*id=faults\/pass / { while ((getline l < F) > 0) if (l ~ /^run .*id=faults\/skip /) print l }' \
  F="$J" "$J" >"$T/mixed/journal"
awk 'prev ~ /^run .*id=faults\/pass / && /^run .*id=faults\/skip / { hit = 1 } { prev = $0 }
     END { exit !hit }' "$T/mixed/journal" || fail "the interleave edit did not apply"
k report rebuild "$T/mixed"
expect_rc 2 "report rebuild of a journal whose runs interleave"
expect_out 'journal:[0-9]+: .*before the `done` of' "rebuild names the interleaved line"
[ -e "$T/mixed/report.yaml" ] && fail "a report was written from an interleaved journal"
finish
