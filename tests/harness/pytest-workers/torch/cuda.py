"""torch.cuda as kiln_pytest's worker checks read it, with counters the
tests move: allocate() and free() change memory_allocated (and grow
memory_reserved as a caching allocator does, never shrinking it), fail()
makes synchronize() raise as after a device fault; init() initialises
CUDA as a suite that touches the device at import does, and the first
matmul (blas()) allocates WORKSPACE bytes that stay allocated."""
import contextlib

WORKSPACE = 64 << 20
_state = {"initialized": False, "allocated": 0, "reserved": 0, "error": None, "blas": False}


def is_initialized():
    return _state["initialized"]


def device_count():
    return 1


def memory_allocated(device=None):
    return _state["allocated"]


def memory_reserved(device=None):
    return _state["reserved"]


def synchronize(device=None):
    if _state["error"]:
        raise RuntimeError(_state["error"])


def allocate(n):
    _state["initialized"] = True
    _state["allocated"] += n
    _state["reserved"] = max(_state["reserved"], _state["allocated"])


def free(n):
    _state["allocated"] -= n


def fail(message):
    _state["initialized"] = True
    _state["error"] = message


def init():
    _state["initialized"] = True


@contextlib.contextmanager
def device(d):
    yield


def blas():
    if not _state["blas"]:
        _state["blas"] = True
        allocate(WORKSPACE)
