"""A synthetic test of dev/pytest-tail.sh: it sleeps, as a GPU test waits."""
import time
def test_long():
    time.sleep(6)
