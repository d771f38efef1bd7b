"""A module that does not import: kiln lists it as one test of its own."""
import kiln_sample_module_that_is_not_there  # noqa: F401


def test_never_collected():
    pass
