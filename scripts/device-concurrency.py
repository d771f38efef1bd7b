#!/usr/bin/env python3
"""Per device, over one or more kiln reports run at the same time: how many
tests ran there and the most that were in flight at once (from each test's
started..ended), against the slots kiln gave the device.

    scripts/device-concurrency.py REPORT.yaml [REPORT.yaml ...]

Used by scripts/gpu-multi.sh on hosts with several GPUs (docs/harness.md,
"Several GPUs"). Needs PyYAML."""
import sys
from datetime import datetime

import yaml


def when(s):
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()


def main(paths):
    events, count = {}, {}
    for p in paths:
        rep = yaml.safe_load(open(p))
        for t in rep.get("tests") or []:
            dev, a, b = t.get("device"), t.get("started"), t.get("ended")
            if dev is None or not a or not b:
                continue
            slots = t.get("slots") or 1
            count[dev] = count.get(dev, 0) + 1
            ev = events.setdefault(dev, [])
            ev += [(when(a), slots), (when(b), -slots)]
    for dev in sorted(events):
        cur = peak = 0
        for _, d in sorted(events[dev], key=lambda e: (e[0], e[1])):
            cur += d
            peak = max(peak, cur)
        print(f"device {dev}: {count[dev]} tests, at most {peak} slots in use at once")
    return 0 if events else 2


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))
