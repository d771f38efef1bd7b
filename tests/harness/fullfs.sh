#!/usr/bin/env bash
# A run folder on a small file system (a 1 MiB tmpfs; needs root to mount
# it, and skips without). Full before the run: refused before any test
# starts, with the numbers, exit 3. Room for the journal but not for every
# log the plan could write: a warning with the numbers, and the run goes on.
# Filled during the run (a test fills it): the end says what could not be
# written, never prints `report: PATH` for a report that is not there, and
# exits non-zero.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || { echo "skipped: needs root to mount a small tmpfs"; exit 77; }
M=$T/fs
mkdir -p "$M"
if ! mount -t tmpfs -o size=1m kiln-fullfs "$M" 2>/dev/null; then
  echo "skipped: cannot mount a tmpfs here (no CAP_SYS_ADMIN?)"
  exit 77
fi
trap 'umount "$M" 2>/dev/null || umount -l "$M"; cleanup' EXIT

# Full: the folder is there, the file system has no byte left.
mkdir -p "$M/full"
dd if=/dev/zero of="$M/filler" bs=64k 2>/dev/null
k run --backend host -o "$M/full" faults/pass
expect_rc 3 "a run folder on a full file system"
expect_out 'run folder .*/full: its file system has 0 KiB free \(of 1.0 MiB\)' "...refused with the numbers"
grep -q '^PASS' "$T/out.txt" && fail "a test ran on the full file system" || ok "...before any test ran"
grep -q '^report: /' "$T/out.txt" && fail "it names a report it did not write" || ok "...naming no report"
rm -f "$M/filler"

# Room for the journal, not for the logs of 8 runs at their largest.
k run --backend host --repeat 8 -o "$M/tight" faults/pass
expect_rc 0 "a run with less room than its logs could take"
expect_out 'warning: run folder .*/tight: its file system has [0-9.]+ [KM]iB free \(of 1.0 MiB\); the logs of 8 test runs may take up to' \
  "...warns with the numbers"
rm -rf "$M/tight"

# Filled by a test: the logs, the journal (the next test's record, its
# output's last 4 KiB among it, needs a page more) and the report fail.
cat >"$T/fill.yaml" <<'EOF2'
suite: f
tests:
  - {name: a_fills, command: [sh, -c, 'cat /dev/zero >"$KILN_RUN_DIR/filler"; true'], needs_gpu: false}
  - {name: b_after, command: [sh, -c, 'yes 0123456789012345678901234567890123456789012345678901234567890123456789 | head -60'], needs_gpu: false}
EOF2
k run -j 1 --manifest "$T/fill.yaml" -o "$M/fill"
expect_rc 3 "a run whose file system fills"
expect_out 'report.yaml.*No space left on device' "the end says the report could not be written"
expect_out 'journal .* is incomplete: a write failed \(No space left on device\)' "...and that the journal is incomplete"
expect_out '2 test logs in .* could not be written \(No space left on device\)' "...and that the logs could not be written"
expect_out 'report: not written' "...and says there is no report"
grep -q '^report: /' "$T/out.txt" && fail "it names a report it did not write" || ok "...naming none"
[ -e "$M/fill/report.yaml" ] && fail "a report.yaml is there after all" || ok "no report.yaml"
finish
