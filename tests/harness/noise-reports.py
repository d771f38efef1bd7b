#!/usr/bin/env python3
"""Synthetic run reports with known noise, for tests/harness/noise.sh:

    noise-reports.py OUTDIR SEED

Writes OUTDIR/{base,same,planted,failing,wide,h1..h4}.yaml: 30 tests of 3
repeats, each with a body time and two kernels (90 timed figures). Every
figure has its own true median and its own spread (2% to 25% within a run,
plus a per-run offset of half that), as real timings do; each run has a
machine factor. base and same are two runs of the same code on the same
machine (same = base's machine 3% slower): no regression. planted is same
with syn/t07's kernel k0 (which spreads 5%) made 2x slower. failing is same with syn/t03
failing in its repeat 2 only. wide is a run whose every figure is 1.5x
slower; h1..h4 are four earlier nights with machine factors within 3%.
"""
import math, os, random, sys

out, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
TESTS = [f"syn/t{i:02d}" for i in range(30)]
figures = {}
for t in TESTS:
    figures[(t, "body")] = (math.exp(rng.uniform(math.log(50), math.log(3000))),
                            math.exp(rng.uniform(math.log(0.02), math.log(0.25))))
    for k in ("k0", "k1"):
        figures[(t, k)] = (math.exp(rng.uniform(math.log(0.05), math.log(50))),
                           math.exp(rng.uniform(math.log(0.02), math.log(0.25))))

# The kernel planted 2x slower below spreads 5% within a run: a 2x change
# is plain in 3 repeats of it (one spreading 25% would need more).
figures[("syn/t07", "k0")] = (figures[("syn/t07", "k0")][0], 0.05)

def run(machine, slow=None, fail=None):
    """One run: {test: [repeat -> {figure: ms}]}, with outcomes."""
    offset = {f: rng.gauss(0, s / 2) for f, (m, s) in figures.items()}
    res = {}
    for t in TESTS:
        reps = []
        for r in range(3):
            v = {}
            for f in ("body", "k0", "k1"):
                m, s = figures[(t, f)]
                x = m * machine * math.exp(offset[(t, f)] + rng.gauss(0, s))
                if slow and (t, f) == slow:
                    x *= 2.0
                v[f] = x
            reps.append(v)
        res[t] = reps
    return res

def write(name, res, fail=None):
    lines = ["---", "format_version: 1", "kiln: {version: \"0.1.0\", git: \"0123456789ab\", command: synthetic}",
             "run: {host: synthetic, backend: host, start: \"2026-01-01T00:00:00.000Z\"}",
             "tests:"]
    for t, reps in res.items():
        for r, v in enumerate(reps, 1):
            failed = fail == (t, r)
            lines += [f"- id: {t}", f"  suite: syn", f"  outcome: {'fail' if failed else 'pass'}",
                      "  final: true", f"  repeat: {r}", "  attempt: 1",
                      f"  message: {'boom' if failed else 'Passed'}",
                      "  times:", f"    body_ms: {v['body']!r}", f"    wall_ms: {v['body'] + 5!r}",
                      "  kernels:"]
            for k in ("k0", "k1"):
                ms = v[k]
                lines.append(f"  - {{name: {k}, launches: 9, total_ms: {9 * ms!r}, min_ms: {0.9 * ms!r}, "
                             f"median_ms: {ms!r}, max_ms: {1.2 * ms!r}}}")
    open(os.path.join(out, name + ".yaml"), "w").write("\n".join(lines) + "\n...\n")

os.makedirs(out, exist_ok=True)
write("base", run(1.00))
same = run(1.03)
write("same", same)
planted = {t: [dict(v) for v in reps] for t, reps in same.items()}
for v in planted["syn/t07"]:
    v["k0"] *= 2.0
write("planted", planted)
write("failing", same, fail=("syn/t03", 2))
for i, m in enumerate((0.98, 1.02, 1.01, 0.99), 1):
    write(f"h{i}", run(m))
write("wide", run(1.5))
