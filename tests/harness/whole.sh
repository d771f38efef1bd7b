#!/usr/bin/env bash
# Only a whole report is read: one cut at a line boundary (a third of it,
# its last 5 bytes, its closing "..."), or whose summary counts other runs
# than it lists, is refused by every reader (show, diff, junit, html, merge)
# with a message that says so, never read as a run of fewer tests. A
# journal of a format this kiln does not know, or with a damaged line
# before its end, is refused by `kiln report rebuild`; one torn at its last
# line (kiln killed mid-write) still rebuilds.
. "$(dirname "$0")/lib.sh"

k run --backend host -o "$T/good" faults/pass faults/fail_assert faults/skip
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
finish
