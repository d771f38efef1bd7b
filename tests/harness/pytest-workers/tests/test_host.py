"""A test that needs no device (kiln runs it with the module that does
not import, in one worker: both need none)."""
import pytest


@pytest.mark.kiln(gpu=False)
def test_host_only():
    pass
