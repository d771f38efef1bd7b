#!/usr/bin/env bash
# The version a user sees moves with what changed: `kiln --version` names
# the newest version in NEWS.md and the report format reports/README.md
# documents, and a report kiln writes carries that format.
. "$(dirname "$0")/lib.sh"

news=$(sed -nE 's/^## ([0-9]+\.[0-9]+\.[0-9]+)$/\1/p' "$KILN_SOURCE/NEWS.md" | head -1)
expect_match "$news" '^[0-9]+\.[0-9]+\.[0-9]+$' "NEWS.md names a version"
doc=$(sed -nE '1s/^# kiln reports \(format_version ([0-9]+)\)$/\1/p' "$KILN_SOURCE/reports/README.md")
expect_match "$doc" '^[0-9]+$' "reports/README.md names its format_version"
k --version
expect_rc 0 "kiln --version"
expect_out "^kiln $news \(report format $doc," "kiln --version: NEWS.md's newest version, the documented report format"
KILN_EMU_DEVICES=1 k run --backend host -j 1 -o "$T/run" engine/version
[ "$rc" = 0 ] || KILN_EMU_DEVICES=1 k run --backend host -j 1 -o "$T/run" engine
expect_eq "$(sed -nE 's/^format_version: ([0-9]+)$/\1/p' "$T/run/report.yaml")" "$doc" \
  "a report kiln writes has the documented format_version"
expect_eq "$(sed -nE 's/^  version: "(.*)"$/\1/p' "$T/run/report.yaml" | head -1)" "$news" \
  "and names the version"
grep -qE "^format_version: $doc$" <(sed -n '/^```yaml$/,/^```$/p' "$KILN_SOURCE/reports/README.md") &&
  ok "the annotated example has the same format_version" || fail "the annotated example's format_version differs"
finish
