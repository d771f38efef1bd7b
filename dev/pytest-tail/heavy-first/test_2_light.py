"""A synthetic test of dev/pytest-tail.sh: it sleeps, as a GPU test waits."""
import time, pytest
@pytest.mark.parametrize("i", range(40))
def test_light(i):
    time.sleep(0.05)
