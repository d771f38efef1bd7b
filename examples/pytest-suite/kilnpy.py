"""A small Python binding of kiln's engine (its public C API, through
ctypes): a context on a visible device, and the row softmax kernel.

The shared engine comes from $KILN_ENGINE_LIB, else the kiln build beside
this example (../../build/engine), else the system's library path.
"""
import ctypes
import ctypes.util
import glob
import os

KE_F32 = 0
MAX_RANK = 6


class DeviceInfo(ctypes.Structure):
    _fields_ = [("index", ctypes.c_int), ("name", ctypes.c_char * 256),
                ("arch", ctypes.c_char * 64), ("warp_size", ctypes.c_int),
                ("multiprocessors", ctypes.c_int), ("l2_bytes", ctypes.c_size_t),
                ("total_bytes", ctypes.c_size_t), ("free_bytes", ctypes.c_size_t)]


class ContextOptions(ctypes.Structure):
    _fields_ = [("device", ctypes.c_int), ("cap_fraction", ctypes.c_double),
                ("poison", ctypes.c_int)]


class Tensor(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("shape", ctypes.c_int64 * MAX_RANK), ("stride", ctypes.c_int64 * MAX_RANK),
                ("data", ctypes.c_void_p)]


class SoftmaxParams(ctypes.Structure):
    _fields_ = [("scale", ctypes.c_float), ("causal", ctypes.c_int),
                ("causal_offset", ctypes.c_int64)]


def _find():
    lib = os.environ.get("KILN_ENGINE_LIB")
    if lib:
        return lib
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in sorted(glob.glob(os.path.join(here, "..", "..", "build", "engine",
                                              "libkiln-engine-*.so"))):
        return cand
    return ctypes.util.find_library("kiln-engine-host") or "libkiln-engine-host.so"


_lib = ctypes.CDLL(_find())
_lib.ke_backend_name.restype = ctypes.c_char_p
_lib.ke_strerror.restype = ctypes.c_char_p
_lib.ke_last_error.restype = ctypes.c_char_p
_lib.ke_context_open.argtypes = [ctypes.POINTER(ContextOptions), ctypes.POINTER(ctypes.c_void_p)]
_lib.ke_context_close.argtypes = [ctypes.c_void_p]
_lib.ke_mem_info.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t),
                             ctypes.POINTER(ctypes.c_size_t)]
_lib.ke_tensor_alloc_at.argtypes = [ctypes.c_void_p, ctypes.POINTER(Tensor), ctypes.c_int,
                                    ctypes.c_int, ctypes.POINTER(ctypes.c_int64),
                                    ctypes.c_char_p, ctypes.c_int]
_lib.ke_tensor_free.argtypes = [ctypes.c_void_p, ctypes.POINTER(Tensor)]
_lib.ke_copy_to_device.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                   ctypes.c_size_t]
_lib.ke_copy_to_host.argtypes = _lib.ke_copy_to_device.argtypes
_lib.ke_softmax.argtypes = [ctypes.c_void_p, ctypes.POINTER(Tensor), ctypes.POINTER(Tensor),
                            ctypes.POINTER(SoftmaxParams)]


class EngineError(RuntimeError):
    pass


def _check(status, what):
    if status != 0:
        detail = _lib.ke_last_error() or b""
        raise EngineError("%s: %s %s" % (what, _lib.ke_strerror(status).decode(),
                                         detail.decode(errors="replace")))


def backend():
    return _lib.ke_backend_name().decode()


def device_count():
    n = ctypes.c_int(0)
    _lib.ke_device_count(ctypes.byref(n))
    return n.value


class Context:
    """An engine context (a device and a stream) on visible device `device`."""

    def __init__(self, device=0):
        opts = ContextOptions()
        _lib.ke_context_options_init(ctypes.byref(opts))
        opts.device = device
        self.ptr = ctypes.c_void_p()
        _check(_lib.ke_context_open(ctypes.byref(opts), ctypes.byref(self.ptr)),
               "context on device %d" % device)
        try:                       # a zygote that opened one must not fork
            import kiln_pytest
            kiln_pytest.fork_unsafe("an engine context is open (kilnpy)")
        except ImportError:
            pass

    def close(self):
        if self.ptr:
            _check(_lib.ke_context_close(self.ptr), "context close")
            self.ptr = ctypes.c_void_p()

    def memory(self):
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        _check(_lib.ke_mem_info(self.ptr, ctypes.byref(free), ctypes.byref(total)), "mem_info")
        return free.value, total.value

    def alloc(self, rows, cols):
        t = Tensor()
        shape = (ctypes.c_int64 * 2)(rows, cols)
        _check(_lib.ke_tensor_alloc_at(self.ptr, ctypes.byref(t), KE_F32, 2, shape,
                                       b"kilnpy.py", 0), "alloc %dx%d" % (rows, cols))
        return t

    def free(self, t):
        _check(_lib.ke_tensor_free(self.ptr, ctypes.byref(t)), "free")

    def softmax(self, rows, scale=1.0):
        """Row softmax of a list of equal-length rows, on the device."""
        n, m = len(rows), len(rows[0])
        host = (ctypes.c_float * (n * m))(*[v for r in rows for v in r])
        x, y = self.alloc(n, m), self.alloc(n, m)
        try:
            _check(_lib.ke_copy_to_device(self.ptr, x.data, host, ctypes.sizeof(host)), "copy")
            p = SoftmaxParams()
            _lib.ke_softmax_params_init(ctypes.byref(p))
            p.scale = scale
            _check(_lib.ke_softmax(self.ptr, ctypes.byref(x), ctypes.byref(y), ctypes.byref(p)),
                   "softmax")
            out = (ctypes.c_float * (n * m))()
            _check(_lib.ke_copy_to_host(self.ptr, out, y.data, ctypes.sizeof(out)), "copy back")
        finally:
            self.free(x), self.free(y)
        return [list(out[i * m:(i + 1) * m]) for i in range(n)]
