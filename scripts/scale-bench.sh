#!/usr/bin/env bash
# The costs of a large Slurm run that grow with the suite, measured
# (docs/scale.md): 64 shard reports holding 10,000 distinct tests, made from
# the records of a real host run (each test a copy of a real one, renamed),
# and a stand-in runner that lists those 10,000 tests; then
#   1. planning: `kiln slurm --dry-run --tasks 64` over the 10,000 tests, by
#      hashing and balanced by the merged report's times (each shard's tests
#      and time: how far the shards are from even);
#   2. `kiln report merge` of the 64 shards (read, check, merge, write);
#   3. `kiln slurm --merge` of a run folder holding them: what the merge job
#      does (the merge, report.yaml, junit.xml, report.html, and the diff
#      against an earlier good run of the same 10,000 tests).
# Each is timed 3 times: wall (best, median), CPU (the least), peak RSS.
#
#   scripts/scale-bench.sh [TESTS [SHARDS]]       (default 10000 64)
# Needs python3 with PyYAML and /usr/bin/time (Debian: time).
# Environment: KILN (default build/harness/parent/kiln), KILN_BASELINE (a
# second kiln to time `report merge` with, e.g. the one before linear
# merge checks), OUT (default a temporary folder, removed).
set -euo pipefail
cd "$(dirname "$0")/.."
tests=${1:-10000}
shards=${2:-64}
kiln=$(realpath "${KILN:-build/harness/parent/kiln}")
export KILN_RUNNER_DIR=${KILN_RUNNER_DIR:-$PWD/build/suites}
out=${OUT:-}
[ -n "$out" ] || { out=$(mktemp -d); trap 'rm -rf "$out"' EXIT; }
mkdir -p "$out"

echo "== seed: a real host run (engine, softmax, rope, swiglu)"
"$kiln" run --backend host -j 2 --token-key "$out/tokens" -o "$out/seed" \
  engine softmax rope swiglu >"$out/seed.log" 2>&1 || true
[ -f "$out/seed/report.yaml" ] || { tail "$out/seed.log"; exit 3; }

echo "== $shards shard reports of $tests tests"
python3 - "$out/seed/report.yaml" "$out" "$tests" "$shards" <<'PY'
import os, sys, yaml
seed, out, ntests, nshards = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rep = yaml.load(open(seed), Loader=yaml.CSafeLoader)
base = [t for t in rep["tests"] if t.get("final", True)]
# Copies share their records: written out in full, as kiln writes reports
# (kiln refuses YAML anchors and aliases).
class Dumper(yaml.CSafeDumper):
    def ignore_aliases(self, data):
        return True
run = os.path.join(out, "run")
os.makedirs(os.path.join(run, "slurm"), exist_ok=True)
# The plan and state a kiln slurm run folder holds (no Slurm job: array=0).
plan = [f"plan format=1 count={nshards} method=hash git={rep['kiln']['git'] or ''} repeat=1 tests={ntests}"]
shard_tests = [[] for _ in range(nshards)]
for i in range(ntests):
    t = dict(base[i % len(base)])
    suite = f"s{i // 100:03d}"
    t["id"], t["suite"] = f"{suite}/t{i:05d}", suite
    t["log"] = dict(t["log"], path=f"logs/{suite}/t{i:05d}.log")
    shard_tests[i % nshards].append(t)
    plan.append(f"test id={t['id']} suite={suite} tags=gpu shard={i % nshards + 1}")
for k, ts in enumerate(shard_tests, 1):
    r = dict(rep)
    r["run"] = dict(rep["run"], shard={"index": k, "count": nshards, "method": "hash",
                                      "source": "slurm", "selected": len(ts),
                                      "selected_total": ntests})
    r["summary"] = dict(rep["summary"], total=len(ts), runs=len(ts), **{"pass": len(ts)})
    r["tests"] = ts
    d = os.path.join(run, "shards", f"1-{k}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "report.yaml"), "w") as f:
        yaml.dump(r, f, Dumper=Dumper, sort_keys=False, width=1 << 20, explicit_end=True)
open(os.path.join(run, "slurm", "plan-1"), "w").write("\n".join(plan) + "\n")
open(os.path.join(run, "slurm", "state"), "w").write(
    f"slurm format=1 kiln={sys.argv[0]} cwd={out} gpus=0\nround n=1 tasks={nshards} array=0 merge=0\n")
PY
du -sh "$out/run/shards" | sed 's/^/   /'

# times LABEL CMD...: 3 runs: best and median wall seconds, the least CPU
# (user + system: what it costs on an idle core, whatever else the machine
# runs), peak RSS.
times() {
  local label=$1; shift
  local t=() c=() rss=0 r
  for i in 1 2 3; do
    /usr/bin/time -o "$out/time" -f '%e %U %S %M' "$@" >/dev/null 2>"$out/err" || { cat "$out/err"; exit 3; }
    read -r w u s m <"$out/time"
    t+=("$w")
    c+=("$(echo "$u $s" | awk '{print $1 + $2}')")
    [ "$m" -gt "$rss" ] && rss=$m
  done
  printf '%-44s wall best %6.2f s, median %6.2f s; CPU %6.2f s; peak RSS %d MiB\n' "$label" \
    "$(printf '%s\n' "${t[@]}" | sort -g | head -1)" "$(printf '%s\n' "${t[@]}" | sort -g | sed -n 2p)" \
    "$(printf '%s\n' "${c[@]}" | sort -g | head -1)" $((rss / 1024))
}

echo "== timings ($(nproc) CPUs, $(uname -m), load average $(cut -d' ' -f1-3 /proc/loadavg))"
times "kiln report merge ($shards x $((tests / shards)))" \
  "$kiln" report merge "$out"/run/shards/*/report.yaml -o "$out/merged.yaml"
if [ -n "${KILN_BASELINE:-}" ]; then
  times "baseline report merge" "$KILN_BASELINE" report merge "$out"/run/shards/*/report.yaml -o "$out/merged0.yaml"
fi
# An earlier good run of the same tests beside it: the diff's base.
mkdir -p "$out/good" && cp "$out/merged.yaml" "$out/good/report.yaml" && echo good >"$out/good/status"
mkdir -p "$out/root" && mv "$out/good" "$out/root/0-good" && mv "$out/run" "$out/root/1-run"
# --merge exits 1 when the diff finds the copies' times changed: not a failure here.
times "kiln slurm --merge (report, JUnit, HTML, diff)" \
  sh -c '"$1" slurm --merge "$2"; [ $? -le 1 ]' _ "$kiln" "$out/root/1-run"
ls -la "$out/root/1-run" | awk 'NR > 1 && $NF ~ /yaml|xml|html|txt/ {printf "   %-12s %8.1f MiB\n", $NF, $5 / 1048576}'

# A runner that lists the 10,000 tests (and one device) for the planner.
mkdir -p "$out/runner"
awk '/^test / {sub(/ shard=[0-9]+$/, ""); print $0 " name=x slots=1 needs_gpu=1"}' \
  "$out/root/1-run/slurm/plan-1" >"$out/runner/list"
printf '#!/bin/sh\ncase "$1" in --list) cat "%s/runner/list" ;;\n--devices) echo "backend name=host devices=1"; echo "device backend=host index=0 name=stand-in" ;; esac\n' \
  "$out" >"$out/runner/kiln-runner-host"
chmod +x "$out/runner/kiln-runner-host"
plan() {  # plan LABEL [ARGS]: the dry run's plan, timed, and its spread
  local label=$1; shift
  # Its own root: no earlier run beside it to balance by unless told.
  times "$label" "$kiln" slurm --dry-run --backend host --tasks "$shards" \
    --runner-dir "$out/runner" -o "$out/plans/x" "$@"
  "$kiln" slurm --dry-run --backend host --tasks "$shards" --runner-dir "$out/runner" \
    -o "$out/plans/x" "$@" | sed -nE 's/^  shard [0-9]+: ([0-9]+) tests?(, ([0-9.]+) s.*)?$/\1 \3/p' |
    awk '{n += $1; t += $2; if ($1 > mn) mn = $1; if ($2 > mt) mt = $2; k++}
         END {printf "   largest shard: %d tests (mean %.1f)", mn, n / k;
              if (t > 0) printf ", %.1f s by the old times (mean %.1f s)", mt, t / k; print ""}'
}
plan "plan, hash ($shards shards)"
plan "plan, by durations ($shards shards)" --shard-durations "$out/merged.yaml"
