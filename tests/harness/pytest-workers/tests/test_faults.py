"""A crash and a hang in the middle of a sequence, passes around them."""
import os
import signal
import time

import pytest


def test_first():
    pass


def test_exits():
    os._exit(7)


def test_second():
    pass


def test_segfault():
    os.kill(os.getpid(), signal.SIGSEGV)


def test_third():
    pass


@pytest.mark.kiln(timeout=3)
def test_hangs():
    time.sleep(600)


def test_last():
    pass
