"""A synthetic test of dev/pytest-tail.sh: it sleeps, as a GPU test waits."""
import time, pytest
@pytest.mark.parametrize("i", range(20))
def test_medium(i):
    time.sleep(0.1)
