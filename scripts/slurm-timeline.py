#!/usr/bin/env python3
"""Where the time of a `kiln slurm` run went, from its run folder alone:
submission, the wait until the array's tasks started, each task's kiln from
start to its first test and to its end (the shards' spread is what
balancing by time is for), the wait for the merge job, and the merge. These
are the fixed costs of docs/scale.md's model; run it on a real cluster's
run folder to put that cluster's figures into the model.

    scripts/slurm-timeline.py RUN
"""
import glob
import os
import statistics
import sys
from datetime import datetime

import yaml


def when(iso):
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() if iso else None


def spread(label, xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return f"{label}: -"
    return (f"{label}: min {min(xs):.2f} s, median {statistics.median(xs):.2f} s, "
            f"max {max(xs):.2f} s")


def main(run):
    state = open(os.path.join(run, "slurm", "state")).read()
    rounds = [dict(kv.split("=", 1) for kv in line.split()[1:])
              for line in state.splitlines() if line.startswith("round ")]
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for r in rounds:
        n, t0 = r["n"], float(r.get("submitted", "nan"))
        starts, launch, first, kilns, ends = [], [], [], [], []
        for d in sorted(glob.glob(os.path.join(run, "shards", f"{n}-*"))):
            task = os.path.join(d, "task")
            t_task = os.path.getmtime(task) if os.path.exists(task) else None
            if t_task:
                starts.append(t_task - t0)
            rep = os.path.join(d, "report.yaml")
            if not os.path.exists(rep):
                continue
            doc = yaml.load(open(rep), Loader=loader)
            s, e = when(doc["run"]["start"]), when(doc["run"]["end"])
            tests = [when(t.get("started")) for t in doc["tests"] if t.get("started")]
            kilns.append(e - s)
            launch.append(s - t_task if t_task else None)
            first.append(min(tests) - s if tests else None)
            ends.append(e - t0)
        status = os.path.join(run, "status")
        merge = {}
        if os.path.exists(status):
            for line in open(status).read().splitlines()[1:]:
                if line.startswith("merge "):
                    merge = {k: float(v) for k, v in (kv.split("=") for kv in line.split()[1:])}
        print(f"round {n}: {r['tasks']} tasks, array job {r['array']}, merge job {r['merge']}")
        print("  " + spread("submission to a task's start", starts))
        print("  " + spread("a task's start to its kiln's (tests listed, devices probed)", launch))
        print("  " + spread("kiln in a task, start to its first test", first))
        print("  " + spread("kiln in a task, start to end", kilns))
        # The status says when the last merge ran: this round's if it is the last.
        if merge and r is rounds[-1]:
            if ends:
                print(f"  last task's end to the merge's start: "
                      f"{merge['started'] - t0 - max(ends):.2f} s")
            print(f"  the merge: {merge['seconds']:.2f} s")
            print(f"  submission to the merge's end: "
                  f"{merge['started'] + merge['seconds'] - t0:.2f} s")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
