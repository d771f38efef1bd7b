"""Tests that show how each failure kind is reported: held back under
kiln unless named (`kiln run --pytest examples/pytest-suite @fault`)."""
import ctypes
import os
import time

import pytest

pytestmark = pytest.mark.fault


def test_wrong_expectation(ctx):
    y = ctx.softmax([[0.0, 0.0]])
    assert y[0][0] == 1.0, "softmax of two equal values is not one-hot"


@pytest.fixture
def broken():
    raise RuntimeError("the fixture could not prepare its input")


def test_setup_error(broken):
    pass


def test_segfault(ctx):
    ctypes.string_at(0)            # a null read: SIGSEGV in this process


@pytest.mark.kiln(timeout=3)
def test_hangs(ctx):
    time.sleep(float(os.environ.get("SAMPLE_HANG_S", "3600")))


@pytest.mark.xfail(reason="known to fail")
def test_xpass():
    pass
