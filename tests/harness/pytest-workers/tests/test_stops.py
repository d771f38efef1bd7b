"""Tests that stop pytest's session from inside: pytest.exit() and a
KeyboardInterrupt raised by the test."""
import pytest


def test_before():
    pass


def test_calls_exit():
    pytest.exit("the test stops the session")


def test_between():
    pass


def test_interrupts():
    raise KeyboardInterrupt


def test_after():
    pass
