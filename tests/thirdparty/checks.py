"""Tests of a project written in Python, one per command line word; kiln
runs each from tests/thirdparty/manifest.yaml and reads its exit status."""
import json
import os
import signal
import sys
import time


def passes():
    assert sum(range(10)) == 45


def fails():
    got = 2 + 2
    if got != 5:
        print(f"expected 5, got {got}")
        sys.exit(1)


def skips():
    print("SKIP: needs a device this machine lacks")
    sys.exit(77)


def crashes():
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGSEGV)


def hangs():
    time.sleep(3600)


def environment():
    """Records what kiln gave this process, for the harness test to read."""
    seen = {k: os.environ.get(k) for k in
            ("KILN_TEST", "KILN_DEVICE", "TEST_TMPDIR", "KILN_RUN_DIR",
             "KILN_EMU_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")}
    seen["cwd"] = os.getcwd()
    with open(os.path.join(os.environ["KILN_RUN_DIR"], "environment.json"),
              "w") as f:
        json.dump(seen, f)


globals()[sys.argv[1]]()
