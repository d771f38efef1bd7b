"""Fixtures of the sample suite, and the kind of conftest a project writes
for `pytest -n N` on several GPUs (the round-robin below): under kiln it
does nothing, kiln narrows each test's devices itself."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _round_robin():
    # What many GPU projects' conftest.py do for pytest-xdist: worker gwN
    # takes GPU N % count. It ignores an outer CUDA_VISIBLE_DEVICES and
    # knows nothing of other processes on the GPUs or of a test's needs.
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker or os.environ.get("KILN_TEST"):
        return
    count = int(os.environ.get("SAMPLE_GPUS", "1"))
    gpu = str(int(worker[2:]) % count)
    os.environ["CUDA_VISIBLE_DEVICES"] = gpu
    os.environ["HIP_VISIBLE_DEVICES"] = gpu
    os.environ["KILN_EMU_VISIBLE_DEVICES"] = gpu     # kiln's host emulation


_round_robin()


@pytest.fixture(autouse=True)
def _placement(request):
    """With $SAMPLE_PLACEMENT: each test's visible devices and process,
    appended there (how scripts/pytest-side-by-side.sh sees placement)."""
    path = os.environ.get("SAMPLE_PLACEMENT")
    if path:
        mask = os.environ.get("KILN_EMU_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES", "all"))
        with open(path, "a") as f:
            f.write("%s devices=%s pid=%d\n" % (request.node.nodeid, mask, os.getpid()))
    yield


@pytest.fixture
def ctx():
    import kilnpy
    c = kilnpy.Context(0)
    yield c
    c.close()


@pytest.fixture
def contexts():
    """A context on each visible device (a test of several GPUs)."""
    import kilnpy
    cs = [kilnpy.Context(d) for d in range(kilnpy.device_count())]
    yield cs
    for c in cs:
        c.close()
