"""Twenty-four short tests of one file: on two lanes a worker starts with
a share of them and asks kiln for the rest (--isolation worker)."""
import time

import pytest


@pytest.mark.parametrize("i", range(24))
def test_short(i):
    time.sleep(0.05)
