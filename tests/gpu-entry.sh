#!/usr/bin/env bash
# scripts/gpu.sh is the one entry for a lent GPU machine: every part in
# scripts/gpu/ parses, names itself on its second line and is listed by
# --help; an unknown subcommand is refused with exit 2; and every
# `scripts/gpu.sh NAME` the docs and scripts mention is a subcommand.
set -u
root=$(cd "${1:-$(dirname "$0")/..}" && pwd)
fail=0
bad() { echo "gpu-entry: $*"; fail=1; }

# The subcommands that ROOT's docs and scripts mention but it lacks.
unknown_mentions() {
  local r=$1 name
  grep -rhoE --exclude=gpu-entry.sh 'scripts/gpu\.sh [a-z][a-z-]*' "$r"/*.md "$r/docs" "$r/dev" "$r/scripts" \
      "$r/examples" "$r/configs" "$r/suites" "$r/tests" 2>/dev/null |
    awk '{print $2}' | sort -u | while read -r name; do
      [ -f "$r/scripts/gpu/$name.sh" ] || echo "$name"
    done
}

for f in "$root/scripts/gpu.sh" "$root"/scripts/gpu/*.sh; do
  bash -n "$f" || bad "$f does not parse"
done
help=$(bash "$root/scripts/gpu.sh" --help) || bad "--help exited $?"
for f in "$root"/scripts/gpu/*.sh; do
  name=$(basename "$f" .sh)
  [ "$name" = env ] && continue
  sed -n 2p "$f" | grep -q "^# scripts/gpu\.sh $name: ." ||
    bad "$f: line 2 is not '# scripts/gpu.sh $name: what it does'"
  grep -qE "^  $name +[^ ]" <<<"$help" || bad "--help does not list $name"
done
msg=$(bash "$root/scripts/gpu.sh" no-such-part 2>&1)
rc=$?
[ $rc -eq 2 ] || bad "an unknown subcommand exited $rc, not 2"
grep -q "unknown subcommand 'no-such-part'" <<<"$msg" || bad "the refusal does not name it: $msg"
bash "$root/scripts/gpu.sh" env >/dev/null 2>&1
[ $? -eq 2 ] || bad "env.sh (sourced by the parts) ran as a subcommand"
bash "$root/scripts/gpu.sh" >/dev/null 2>&1
[ $? -eq 2 ] || bad "no subcommand did not exit 2"
left=$(unknown_mentions "$root")
[ -z "$left" ] || bad "mentioned but no such subcommand: $left"

# The mention check must be able to fail: a planted mention in a scratch copy.
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/scripts/gpu" "$tmp/docs"
cp "$root"/scripts/gpu/*.sh "$tmp/scripts/gpu/"
echo 'run `scripts/gpu.sh no-such-part` there' >"$tmp/docs/x.md"
[ "$(unknown_mentions "$tmp")" = no-such-part ] || bad "the planted mention was not found"
[ $fail -eq 0 ] && echo "gpu-entry: $(grep -cE '^  [a-z]' <<<"$help") subcommands, all listed"
exit $fail
