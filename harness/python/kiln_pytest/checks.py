"""What a worker checks between two tests (`run --worker`): that the test
that just ended left nothing behind for the next one in the same
interpreter. Each check is one entry of CHECKS: `before()` takes its
state before a test, `after(state, until)` says what the test left (a
list of short phrases, empty when nothing), waiting until the clock
`until` for things that are already ending (a thread returning, a child
exiting) so that a test that stops what it started is not blamed for
the moment that takes.

  threads    threading.enumerate(): Python threads alive that were not
             before the test (threads C libraries start for themselves,
             OpenMP's or CUDA's, are not Python threads and not counted)
  processes  the interpreter's children (from /proc, zombies left out, and
             multiprocessing's active_children(), which also reaps its
             ended ones) that were not there before the test, but for
             multiprocessing's own helpers: its resource tracker and its
             fork server, which the first process started with the spawn
             or forkserver method starts (torch.multiprocessing.spawn does)
             and which serve every later one for the interpreter's life,
             as torch's workspaces do (a distributed test of Liger-Kernel
             ended its worker at every such test before)
  torch      only where torch is imported and has initialised CUDA: a
             sticky device error (torch.cuda.synchronize() raising), and
             per device, after gc.collect(), memory_allocated() and
             memory_reserved() above what they were before the test. The
             caching allocator is not emptied (no empty_cache()): blocks
             it keeps are blocks the next test may be handed uninitialised,
             so a test that grew the cache is reported as having left it.

             Before the first test that finds CUDA initialised, the worker
             has torch allocate its per-device matrix library workspaces
             (a small matmul per dtype, with and without a bias, and a
             backward pass): torch keeps them for the process, and a test
             that was first to multiply would otherwise be reported as
             having left them (64 MiB per device on an H200 for a test
             of linear layers, torch 2.11), ending a worker at nearly
             every test of such a suite.

The torch check reads torch as the tests see it (sys.modules['torch']), so
a suite's own stand-in module is checked as torch would be.
"""
import gc
import os
import sys
import threading
import time

# How long a worker waits for what a test is already stopping.
GRACE_S = 1.0


def _mib(n):
    return "%.1f MiB" % (n / 1048576.0)


# ---- threads -----------------------------------------------------------------------

def _threads():
    # Dummy threads stand for threads that C code started and that once
    # called into Python; they never end as far as threading knows.
    return {t for t in threading.enumerate()
            if t.is_alive() and not isinstance(t, threading._DummyThread)}


def _threads_after(before, until):
    new = _threads() - before
    for t in new:
        t.join(max(0.0, until - time.monotonic()))
    left = sorted((t for t in new if t.is_alive()), key=lambda t: t.name)
    if not left:
        return []
    names = ", ".join("%s%s" % (t.name, " (daemon)" if t.daemon else "") for t in left[:4])
    return ["%d thread%s still running: %s%s" % (len(left), "" if len(left) == 1 else "s",
                                                names, ", ..." if len(left) > 4 else "")]


# ---- processes -----------------------------------------------------------------------

def _helpers():
    """The pids of multiprocessing's resource tracker and fork server where
    this interpreter started them."""
    pids = set()
    for mod, obj, attr in (("multiprocessing.resource_tracker", "_resource_tracker", "_pid"),
                           ("multiprocessing.forkserver", "_forkserver", "_forkserver_pid")):
        pid = getattr(getattr(sys.modules.get(mod), obj, None), attr, None)
        if isinstance(pid, int):
            pids.add(pid)
    return pids


def _children():
    """{pid: command} of this interpreter's live children, multiprocessing's
    helpers left out."""
    me, out, helpers = os.getpid(), {}, _helpers()
    mp = sys.modules.get("multiprocessing")
    if mp is not None:
        try:
            mp.active_children()        # reaps the ended ones, as it does itself
        except Exception:
            pass
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return out
    for p in pids:
        try:
            with open("/proc/%s/stat" % p) as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses.
        comm, rest = stat[stat.find("(") + 1:stat.rfind(")")], stat[stat.rfind(")") + 2:].split()
        if len(rest) < 2 or rest[0] == "Z" or int(rest[1]) != me or int(p) in helpers:
            continue
        out[int(p)] = comm
    return out


def _processes_after(before, until):
    while True:
        left = {p: c for p, c in _children().items() if p not in before}
        if not left or time.monotonic() >= until:
            break
        time.sleep(0.02)
    if not left:
        return []
    what = ", ".join("pid %d `%s`" % (p, c) for p, c in sorted(left.items())[:4])
    return ["%d child process%s still running: %s%s" % (len(left), "" if len(left) == 1
                                                        else "es", what,
                                                        ", ..." if len(left) > 4 else "")]


# ---- torch ------------------------------------------------------------------------------

def _cuda():
    """torch's cuda module when torch is imported and CUDA initialised."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            return torch.cuda
    except Exception:
        pass
    return None


def _memory(cuda):
    return [(cuda.memory_allocated(d), cuda.memory_reserved(d))
            for d in range(cuda.device_count())]


_warmed = []


def _warm(torch, cuda):
    """The workspaces cuBLAS and cuBLASLt keep per device, stream and
    thread, made once, before a test can be the one that made them:
    torch.mm and torch.addmm (the Lt path) in each dtype on every device,
    then a backward pass, which autograd runs on a thread of its own with
    a handle (and so a workspace) of its own."""
    _warmed.append(True)
    for d in range(cuda.device_count()):
        for dt in ("float32", "float16", "bfloat16"):
            try:
                with cuda.device(d):
                    a = torch.ones(16, 16, device="cuda:%d" % d, dtype=getattr(torch, dt))
                    torch.mm(a, a)
                    torch.addmm(a, a, a)
                    del a
            except Exception:
                continue    # a dtype the device lacks: nothing to make
            try:
                with cuda.device(d):
                    g = torch.ones(16, 16, device="cuda:%d" % d, dtype=getattr(torch, dt),
                                   requires_grad=True)
                    torch.addmm(g, g, g).sum().backward()
                    del g
            except Exception:
                pass
        try:
            cuda.synchronize(d)
        except Exception:
            pass            # a sticky error: the check after the test says so


def _torch_before():
    cuda = _cuda()
    if cuda is None:
        return None        # nothing allocated yet
    if not _warmed:
        _warm(sys.modules["torch"], cuda)
    try:
        return _memory(cuda)
    except Exception:
        return None


def _torch_after(before, until):
    cuda = _cuda()
    if cuda is None:
        return []
    try:
        cuda.synchronize()
    except Exception as e:
        msg = str(e).strip().splitlines()
        return ["a CUDA error after the test: torch.cuda.synchronize() raised %s: %s"
                % (type(e).__name__, msg[0] if msg else "")]
    gc.collect()
    try:
        now = _memory(cuda)
    except Exception as e:
        return ["torch's CUDA memory could not be read after the test: %s" % e]
    was = before or []
    out = []
    for d, (alloc, res) in enumerate(now):
        a0, r0 = was[d] if d < len(was) else (0, 0)
        if alloc > a0:
            out.append("cuda:%d memory_allocated %s -> %s (%d bytes still allocated)"
                       % (d, _mib(a0), _mib(alloc), alloc - a0))
        if res > r0:
            out.append("cuda:%d memory_reserved %s -> %s (torch's caching allocator keeps "
                       "%d bytes more)" % (d, _mib(r0), _mib(res), res - r0))
    return out


CHECKS = [
    ("threads", _threads, _threads_after),
    ("processes", _children, _processes_after),
    ("torch", _torch_before, _torch_after),
]


def before():
    """Every check's state before a test."""
    return [(name, take()) for name, take, _ in CHECKS]


def left_behind(states, grace_s=GRACE_S):
    """What the test left: (check, phrase) per finding; [] for nothing."""
    until = time.monotonic() + grace_s
    out = []
    for (name, state), (_, _, after) in zip(states, CHECKS):
        out += [(name, phrase) for phrase in after(state, until)]
    return out
