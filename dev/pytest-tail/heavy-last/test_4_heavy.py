"""A synthetic test of dev/pytest-tail.sh: it sleeps, as a GPU test waits."""
import time, pytest
@pytest.mark.parametrize("i", range(12))
def test_heavy(i):
    time.sleep(1.0)
