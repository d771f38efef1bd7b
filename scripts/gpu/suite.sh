#!/usr/bin/env bash
# scripts/gpu.sh suite: the whole default cuda suite, timed: counts, slots, slowest tests
# The whole default cuda suite on a lent GPU host (one GPU or several), in
# one device call: no selection, tag slow included, default settings. Prints
# the machine, the total wall time, the outcome counts, the ten slowest
# tests with where their time went (kiln run's own ending), the slots each
# device got, and the references' share of all test bodies. Build here
# first with `scripts/gpu.sh stage`; run there from the repository root
# with .device carried:
#
#   bash scripts/gpu.sh suite [KILN RUN ARGS...]
#
# Files under $OUT: suite.log (the console), summary.txt, run/ (report).
set -u
. "$(dirname "$0")/env.sh"
s="$out/summary.txt"
{ nvidia-smi -L; echo "host cores: $(nproc)"; } > "$s" 2>&1
t0=$(date +%s.%N)
"$stage/kiln" run --backend cuda --runner-dir "$stage" --out "$out/run" "$@" \
  > "$out/suite.log" 2>&1
rc=$?
t1=$(date +%s.%N)
{
  awk -v rc="$rc" -v a="$t0" -v b="$t1" 'BEGIN {printf "kiln run: exit %d, wall %.1f s\n", rc, b - a}' 
  grep -E '^kiln: [0-9]+ test runs' "$out/suite.log" | head -2
  # The devices as the report has them (their slots among them).
  awk '/^devices:/ {on = 1; print; next} /^[a-z]/ {on = 0} on' "$out/run/report.yaml"
  sed -n '/^slowest/,/^report:/p' "$out/suite.log"
  # The references' share of all bodies (times.reference_ms, body_ms).
  awk '/^ *body_ms:/ {b += $2} /^ *reference_ms:/ {r += $2}
       END {printf "bodies %.1f s, of which references %.1f s\n", b / 1e3, r / 1e3}' \
    "$out/run/report.yaml"
} >> "$s" 2>&1
cat "$s"
exit "$rc"
