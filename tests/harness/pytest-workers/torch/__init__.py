"""A stand-in for torch (README.md): only torch.cuda's counters."""
from . import cuda  # noqa: F401
