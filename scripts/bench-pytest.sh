#!/usr/bin/env bash
# A pytest suite three ways on this machine, one after another: (a)
# `pytest -n 8`, (b) `kiln run --pytest` at its default settings (workers
# on a GPU backend, one process per test on the host), (c) the same with
# `--isolation worker`; per way the
# tests, pass/fail/skip counts, wall seconds, tests per second, and whether
# each node id's verdict agrees with pytest's (docs/pytest.md,
# "Measuring against pytest -n 8").
#   scripts/bench-pytest.sh [-C DIR] [-o OUT] [-n N] [--ways W] [--cache cold|warm] [--] PATH...
# -C DIR: run everything from DIR (a third-party project's root, where its
# pytest rootdir is); PATHs are relative to it. -o OUT: where the runs'
# output goes (default: a new folder under /tmp). -n N: pytest's workers
# (default 8). --ways W: the ways to run, a comma-separated subset of a,
# b, c (default a,b,c; where b is left out the node ids are the ones
# `kiln list` selects; r: way b run again in its own run folder, as a
# user's second run: the listing it kept, its times for longest first,
# and the compiler caches way b filled). --cache: each way's compiler caches
# (TRITON_CACHE_DIR, TORCHINDUCTOR_CACHE_DIR) start empty (cold, the
# default), or as a copy of the caches an untimed `pytest -n N` run of the
# same ids filled first (warm). kiln is $KILN, else this tree's build/harness/parent/kiln;
# the interpreter $KILN_PYTHON, else python3, else /usr/bin/python3,
# whichever has pytest and pytest-xdist. All three ways run the same node
# ids: the ones kiln selects by default (way b's report; a test kiln holds
# back, tagged fault, perf or bench, is left out of pytest's run too).
# Each kiln way lists cold (a listing folder of its own under OUT).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=. OUT= N=8 WAYS=a,b,c CACHE=cold
while [ $# -gt 0 ]; do
  case $1 in
    -C) DIR=$2; shift 2 ;;
    -o) OUT=$2; shift 2 ;;
    -n) N=$2; shift 2 ;;
    --ways) WAYS=$2; shift 2 ;;
    --cache) CACHE=$2; shift 2 ;;
    --) shift; break ;;
    -*) echo "bench-pytest.sh: unknown option $1 (usage: [-C DIR] [-o OUT] [-n N] [--ways W] PATH...)" >&2; exit 2 ;;
    *) break ;;
  esac
done
[[ ,$WAYS, =~ ^(,(a|b|c|r))+,$ ]] ||
  { echo "bench-pytest.sh: --ways '$WAYS': a comma-separated list of a, b, c and r" >&2; exit 2; }
[[ $CACHE == cold || $CACHE == warm ]] ||
  { echo "bench-pytest.sh: --cache '$CACHE': cold or warm" >&2; exit 2; }
way_on() { [[ ,$WAYS, == *",$1,"* ]]; }
if way_on r && ! way_on b; then
  echo "bench-pytest.sh: --ways '$WAYS': r (way b again) needs b" >&2; exit 2
fi
[ $# -gt 0 ] || { echo "bench-pytest.sh: no pytest path given (usage: [-C DIR] [-o OUT] [-n N] PATH...)" >&2; exit 2; }
KILN=${KILN:-$ROOT/build/harness/parent/kiln}
[ -x "$KILN" ] || { echo "bench-pytest.sh: no kiln at $KILN (build it: scripts/build.sh, or set KILN)" >&2; exit 2; }
for PY in ${KILN_PYTHON:-python3 /usr/bin/python3}; do
  "$PY" -c 'import pytest, xdist' 2>/dev/null && break
done
"$PY" -c 'import pytest, xdist' 2>/dev/null ||
  { echo "bench-pytest.sh: no python3 with pytest and pytest-xdist (KILN_PYTHON=${KILN_PYTHON:-})" >&2; exit 2; }
export KILN_PYTHON=$PY
OUT=${OUT:-$(mktemp -d /tmp/bench-pytest.XXXXXX)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$DIR" || exit 2
paths=("$@")
kpaths=()
for p in "${paths[@]}"; do kpaths+=(--pytest "$p"); done

# The plugin that writes pytest's verdict per node id (the controller's,
# under xdist) and the reader of kiln's reports.
mkdir -p "$OUT/py"
cat >"$OUT/py/kiln_bench_verdicts.py" <<'EOF'
"""pytest's verdict per node id into $KILN_BENCH_VERDICTS: pass, fail,
error, skip (xfailed: skip; xpassed: pass, strict: fail), as kiln maps
pytest's reports."""
import os


class _Verdicts:
    def __init__(self, path):
        self.path, self.v = path, {}

    def pytest_collectreport(self, report):
        if report.failed:
            self.v[report.nodeid] = "error"

    def pytest_runtest_logreport(self, report):
        was = self.v.get(report.nodeid)
        if report.when == "setup":
            self.v[report.nodeid] = ("error" if report.failed else
                                     "skip" if report.skipped else "pass")
        elif report.when == "call" and was == "pass":
            self.v[report.nodeid] = ("fail" if report.failed else
                                     "skip" if report.skipped else "pass")
        elif report.when == "teardown" and report.failed and was in ("pass", None):
            self.v[report.nodeid] = "error"

    def pytest_sessionfinish(self, session):
        with open(self.path, "w") as f:
            for nid, v in self.v.items():
                f.write("%s\t%s\n" % (v, nid))


def pytest_configure(config):
    if os.environ.get("KILN_BENCH_ROOTDIR"):  # only where the rootdir is
        with open(os.environ["KILN_BENCH_ROOTDIR"], "w") as f:
            f.write(str(config.rootpath))
        import pytest
        pytest.exit("rootdir written", 0)
    if hasattr(config, "workerinput"):        # an xdist worker: the controller writes
        return
    config.pluginmanager.register(_Verdicts(os.environ["KILN_BENCH_VERDICTS"]), "kiln-bench")
EOF
cat >"$OUT/py/kiln_bench_report.py" <<'EOF'
"""kiln's report (REPORT) as 'outcome<TAB>node id' lines, one per final
run, the id unescaped back to pytest's node id (%HH)."""
import json
import re
import sys

rec = {}
out = []


def scalar(v):
    v = v.strip()
    if v.startswith('"'):
        try:
            return json.loads(v)
        except ValueError:
            return v[1:-1]
    return v[1:-1] if v.startswith("'") else v


def flush():
    if rec.get("final", "true") == "true" and "id" in rec:
        nid = re.sub(r"%([0-9A-F]{2})", lambda m: chr(int(m.group(1), 16)), rec["id"])
        out.append("%s\t%s" % (rec.get("outcome", "?"), nid))


intests = False
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    line = line.rstrip("\n")
    if not line.strip():
        continue   # a blank line inside a test's log (a block scalar)
    if not line.startswith(" ") and not line.startswith("-"):
        if intests:
            flush()
            rec = {}
        intests = line.startswith("tests:")
        continue
    if not intests:
        continue
    if line.startswith("- id:"):
        flush()
        rec = {"id": scalar(line[5:])}
    elif line.startswith("  ") and not line.startswith("   ") and ":" in line:
        k, _, v = line[2:].partition(":")
        if k in ("outcome", "final"):
            rec[k] = scalar(v)
if intests:
    flush()
print("\n".join(out))
EOF

# caches NAME: this way's compiler caches, empty or a copy of the primed.
caches() {
  rm -rf "$OUT/$1.cache"
  if [ "$CACHE" = warm ] && [ -d "$OUT/primed.cache" ]; then
    cp -a "$OUT/primed.cache" "$OUT/$1.cache"
  else
    mkdir -p "$OUT/$1.cache/triton" "$OUT/$1.cache/inductor"
  fi
  export TRITON_CACHE_DIR=$OUT/$1.cache/triton TORCHINDUCTOR_CACHE_DIR=$OUT/$1.cache/inductor
}

secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# kiln_way NAME ARGS...: a kiln run; its verdicts in OUT/NAME.verdicts.
kiln_way() {
  local name=$1 s e
  shift
  caches "$name"
  s=$(date +%s.%N)
  KILN_PYTEST_LISTING=$OUT/$name.listing "$KILN" run "${kpaths[@]}" -o "$OUT/$name" "$@" \
    >"$OUT/$name.log" 2>&1
  echo "$name exit $?" >>"$OUT/exits"
  e=$(date +%s.%N)
  secs "$s" "$e" >"$OUT/$name.wall"
  "$PY" "$OUT/py/kiln_bench_report.py" "$OUT/$name/report.yaml" >"$OUT/$name.verdicts" 2>/dev/null ||
    : >"$OUT/$name.verdicts"
}

: >"$OUT/exits"
echo "bench-pytest: ${paths[*]} in $(pwd); output in $OUT" >&2
# Warm, way b runs after the priming: the ids come from kiln's listing.
if way_on b && [ "$CACHE" = cold ]; then
  echo "bench-pytest: (b) kiln run --pytest ..." >&2
  kiln_way kiln-default
  cut -f2- "$OUT/kiln-default.verdicts" >"$OUT/nodeids"
else
  # What way b would run: kiln's own listing of the tests it selects.
  KILN_PYTEST_LISTING=$OUT/list.listing "$KILN" list "${kpaths[@]}" 2>"$OUT/collect.err" |
    awk '$1 ~ /::/ { print $1 }' >"$OUT/nodeids"
fi
if [ ! -s "$OUT/nodeids" ]; then
  echo "bench-pytest: no node ids (see $OUT/kiln-default.log or $OUT/collect.err):" >&2
  tail -5 "$OUT/kiln-default.log" "$OUT/collect.err" 2>/dev/null >&2
  exit 1
fi
# Node ids are relative to pytest's rootdir, which kiln ran them in: so
# does pytest (as its users run it there).
# The verdicts plugin is on pytest's path only: kiln's ways keep the
# environment they began with (a PYTHONPATH that changed between b and r
# would rightly miss r's kept listing).
PYP=$OUT/py${PYTHONPATH:+:$PYTHONPATH}
PYTHONPATH=$PYP KILN_BENCH_ROOTDIR=$OUT/rootdir "$PY" -m pytest -p kiln_bench_verdicts "${paths[@]}" \
  >"$OUT/rootdir.log" 2>&1
[ -s "$OUT/rootdir" ] || { echo "bench-pytest: pytest found no rootdir (see $OUT/rootdir.log)" >&2; exit 1; }
mapfile -t ids <"$OUT/nodeids"
if [ "$CACHE" = warm ]; then
  echo "bench-pytest: priming the compiler caches (pytest -n $N, untimed) ..." >&2
  caches primed
  (cd "$(cat "$OUT/rootdir")" && KILN_BENCH_VERDICTS=$OUT/primed.verdicts \
    PYTHONPATH=$PYP "$PY" -m pytest -n "$N" -p no:cacheprovider -p kiln_bench_verdicts -q "${ids[@]}") \
    >"$OUT/primed.log" 2>&1
fi
if way_on b && [ "$CACHE" = warm ]; then
  echo "bench-pytest: (b) kiln run --pytest ..." >&2
  kiln_way kiln-default
fi
if way_on a; then
echo "bench-pytest: (a) pytest -n $N ($(wc -l <"$OUT/nodeids") node ids, in $(cat "$OUT/rootdir")) ..." >&2
caches pytest
s=$(date +%s.%N)
(cd "$(cat "$OUT/rootdir")" && KILN_BENCH_VERDICTS=$OUT/pytest.verdicts \
  PYTHONPATH=$PYP "$PY" -m pytest -n "$N" -p no:cacheprovider -p kiln_bench_verdicts -q "${ids[@]}") \
  >"$OUT/pytest.log" 2>&1
echo "pytest exit $?" >>"$OUT/exits"
e=$(date +%s.%N)
secs "$s" "$e" >"$OUT/pytest.wall"
fi
if way_on r; then
  # Way b's folder, listing and caches as it left them.
  echo "bench-pytest: (r) kiln run --pytest again, in way b's run folder ..." >&2
  export TRITON_CACHE_DIR=$OUT/kiln-default.cache/triton TORCHINDUCTOR_CACHE_DIR=$OUT/kiln-default.cache/inductor
  s=$(date +%s.%N)
  KILN_PYTEST_LISTING=$OUT/kiln-default.listing "$KILN" run "${kpaths[@]}" -o "$OUT/kiln-default" \
    >"$OUT/kiln-rerun.log" 2>&1
  echo "kiln-rerun exit $?" >>"$OUT/exits"
  secs "$s" "$(date +%s.%N)" >"$OUT/kiln-rerun.wall"
  "$PY" "$OUT/py/kiln_bench_report.py" "$OUT/kiln-default/report.yaml" >"$OUT/kiln-rerun.verdicts" 2>/dev/null ||
    : >"$OUT/kiln-rerun.verdicts"
fi
if way_on c; then
  echo "bench-pytest: (c) kiln run --pytest ... --isolation worker ..." >&2
  kiln_way kiln-worker --isolation worker
fi

# The table: kiln's outcomes mapped to pytest's (flaky and polluted pass,
# crash and timeout fail); a leak or a lost test is its own.
"$PY" - "$OUT" "$N" <<'EOF'
import sys
out, n = sys.argv[1], sys.argv[2]
MAP = {"pass": "pass", "flaky": "pass", "polluted": "pass", "fail": "fail",
       "crash": "fail", "timeout": "fail", "error": "error", "skip": "skip"}


def load(name):
    v = {}
    try:
        for line in open("%s/%s.verdicts" % (out, name), encoding="utf-8"):
            o, _, nid = line.rstrip("\n").partition("\t")
            if nid:
                v[nid] = o
    except OSError:
        pass
    return v


ref = load("pytest")
ways = [("pytest -n %s" % n, "pytest", False), ("kiln run --pytest", "kiln-default", True),
        ("kiln, run again (r)", "kiln-rerun", True),
        ("kiln --isolation worker", "kiln-worker", True)]
print("%-26s %6s %5s %5s %5s %6s %8s %8s  %s" % ("way", "tests", "pass", "fail", "skip",
                                                  "other", "wall_s", "tests/s",
                                                  "verdicts vs pytest"))
notes = []
for label, name, kiln in ways:
    try:
        wall = float(open("%s/%s.wall" % (out, name)).read())
    except OSError:
        continue  # a way left out (--ways)
    v = load(name)
    got = {k: (MAP.get(o, o) if kiln else o) for k, o in v.items()}
    c = {k: sum(1 for o in got.values() if o == k) for k in ("pass", "fail", "skip")}
    other = len(got) - sum(c.values())
    if kiln:
        ids = sorted(set(ref) | set(got))
        differ = [i for i in ids if ref.get(i) != got.get(i)]
        agree = "%d/%d agree" % (len(ids) - len(differ), len(ids))
        for i in differ[:20]:
            notes.append("  %s: %s: pytest %s, kiln %s" % (label, i, ref.get(i, "-"),
                                                          v.get(i, "-")))
        if len(differ) > 20:
            notes.append("  %s: ... %d more" % (label, len(differ) - 20))
    else:
        agree = "(the reference)"
    print("%-26s %6d %5d %5d %5d %6d %8.1f %8.2f  %s" % (label, len(got), c["pass"],
                                                      c["fail"], c["skip"], other, wall,
                                                      len(got) / wall if wall > 0 else 0,
                                                      agree))
if notes:
    print("verdicts that differ (kiln's own outcome):")
    print("\n".join(notes))
EOF
sed 's/^/exit: /' "$OUT/exits"
