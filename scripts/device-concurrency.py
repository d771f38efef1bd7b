#!/usr/bin/env python3
"""Per device, over one or more kiln reports run at the same time: how many
tests ran there and the most slots in use at once, against the slots kiln
gave the device. Two counts:
  in flight: each test's started..ended (kiln's clock: spawn to reaping,
    which includes a child's wait for its slots in another kiln's run);
  holding:   started + token_wait_ms .. ended, which contains the time the
    child held its slots (it takes them after its start-up and gives them
    back when it exits, before kiln reaps it): an upper bound, so a peak
    within the slots proves no device was oversubscribed.

    scripts/device-concurrency.py REPORT.yaml [REPORT.yaml ...]

Used by scripts/gpu.sh multi on hosts with several GPUs (docs/devices.md,
"Several GPUs"). Needs PyYAML."""
import sys
from datetime import datetime

import yaml


def when(s):
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()


def main(paths):
    events, holding, count = {}, {}, {}
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
            wait = ((t.get("times") or {}).get("token_wait_ms") or 0) / 1e3
            hv = holding.setdefault(dev, [])
            hv += [(min(when(a) + wait, when(b)), slots), (when(b), -slots)]
    def peak(ev):
        cur = top = 0
        for _, d in sorted(ev, key=lambda e: (e[0], e[1])):
            cur += d
            top = max(top, cur)
        return top

    for dev in sorted(events):
        print(f"device {dev}: {count[dev]} tests, at most {peak(events[dev])} slots in flight "
              f"at once, at most {peak(holding[dev])} held")
    return 0 if events else 2


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))
