"""Eight short tests of a second file of the same rootdir: given as a
--pytest source of its own beside test_many.py, a worker of either runs
both files' tests (--isolation worker)."""
import time

import pytest


@pytest.mark.parametrize("i", range(8))
def test_other(i):
    time.sleep(0.05)
