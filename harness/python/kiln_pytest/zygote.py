"""The zygote: a process that imported the tests' heavy dependencies once
(torch takes seconds) and forks a fresh child per test.

kiln starts one per pytest source for the run (`python3 -m kiln_pytest
zygote`), outside any test, before any device is touched: the zygote
imports only what the test files import from outside the project, never
the test modules or conftest.py (they may open a device at import). A
test's process is still kiln's: `run` (the client, started by kiln as any
test, with its slots, environment and process group) hands the zygote its
standard streams, result pipe, environment and folder; the zygote forks a
child that takes them, joins the client's process group (kiln's timeout
signals reach it) and cgroup, and runs the node id; the client waits and
ends as the child ended (its exit status, or the same signal), so kiln
decides a crash, a timeout or a pass as for any process. A client that dies
(SIGKILL after the grace) closes its socket: the zygote kills its child.

Forking is unsafe when the imports left a device context, a device file
open or threads still there after one probe fork (thread pools that stop
themselves before a fork, OpenBLAS's under numpy, are fine): then every
client is told why and runs its test in a fresh interpreter instead.
"""
import ast
import ctypes
import json
import os
import selectors
import signal
import socket
import struct
import sys
import time

_MAX_MSG = 1 << 22


def _send_msg(sock, obj, fds=()):
    data = json.dumps(obj).encode()
    head = struct.pack("!I", len(data))
    if fds:
        socket.send_fds(sock, [head + data], list(fds))
    else:
        sock.sendall(head + data)


def _recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


# ---- The client (the test's process kiln started) -------------------------------

def delegate(path, argv):
    """Runs `run argv` in a child of the zygote at path and exits as it
    ended; returns why not (for a fresh interpreter) when the zygote is
    absent or unfit."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
    except OSError as e:
        return "no zygote at %s (%s)" % (path, e.strerror)
    fds = [fd for fd in (0, 1, 2, 3) if _is_open(fd)]
    # The child's signals come from kiln to the process group: this
    # process outlives a SIGTERM to report how the child ended.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    try:
        _send_msg(s, {"argv": argv, "env": dict(os.environ), "cwd": os.getcwd(),
                      "pgid": os.getpgid(0), "pid": os.getpid(), "fds": fds}, fds)
        f = s.makefile("r")
        for line in f:
            word, _, rest = line.rstrip("\n").partition(" ")
            if word == "unfit":
                for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                    signal.signal(sig, signal.SIG_DFL)
                return "the zygote cannot fork: " + rest
            if word == "pid":
                _forward_to(int(rest))
            if word == "status":
                _end_as(int(rest))
    except (OSError, EOFError, ValueError):
        pass
    # The zygote went away mid-test: the test's end is unknown.
    print("kiln_pytest: the zygote ended before the test did", file=sys.stderr)
    os._exit(3)


def _forward_to(pid):
    """Where the child could not join this process group (another
    session), kiln's signals to the group are passed on."""
    try:
        if os.getpgid(pid) == os.getpgid(0):
            return
    except OSError:
        return

    def forward(sig, _frame):
        try:
            os.kill(pid, sig)
        except OSError:
            pass
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)


def _is_open(fd):
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


def _end_as(status):
    sys.stdout.flush()
    sys.stderr.flush()
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        import resource
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 3)


# ---- What to import ---------------------------------------------------------------

def _py_files(paths):
    for p in paths:
        if os.path.isfile(p) and p.endswith(".py"):
            yield p
        for root, dirs, files in os.walk(p):
            dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
            for f in files:
                if f.endswith(".py") and (f.startswith("test") or f.endswith("_test.py")
                                          or f == "conftest.py"):
                    yield os.path.join(root, f)


def _importorskip(node):
    """The module of a top-level `[x =] pytest.importorskip("torch")`, the
    way suites import what may be missing; else None."""
    call = getattr(node, "value", None) if isinstance(node, (ast.Assign, ast.Expr)) else None
    if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr == "importorskip" and call.args
            and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str)):
        return call.args[0].value
    return None


def dependencies(paths, rootdir):
    """Top-level modules the test files import that live outside the
    project (torch, numpy): the ones worth importing once."""
    names = []
    for path in _py_files(paths):
        try:
            tree = ast.parse(open(path, "rb").read(), path)
        except (OSError, SyntaxError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                mods = [node.module]
            elif _importorskip(node):
                mods = [_importorskip(node)]
            else:
                continue
            for m in mods:
                top = m.split(".")[0]
                if top not in names:
                    names.append(top)
    out = []
    import importlib.util
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        origin = getattr(spec, "origin", None) or ""
        if spec is None or (origin and os.path.abspath(origin).startswith(rootdir + os.sep)):
            continue
        out.append(name)
    return out


def unfit():
    """Why a fork of this process would be unsafe, or ''."""
    from . import _unsafe
    if _unsafe:
        return "; ".join(_unsafe)
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            return "torch initialised CUDA at import"
    except Exception:
        pass
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            continue
        if target.startswith(("/dev/nvidia", "/dev/kfd", "/dev/dri/")):
            return "a device file is open after the imports (%s)" % target
    if len(_threads()) > 1 and not _probe_fork():
        return "the zygote's probe fork did not end within %d s" % _PROBE_S
    threads = _threads()
    if len(threads) > 1:
        return ("%d threads after the imports, still there after a fork (a fork copies "
                "one): %s" % (len(threads), _thread_names(threads)))
    return ""


_PROBE_S = 5


def _threads():
    return os.listdir("/proc/self/task")


def _thread_names(tids):
    """'python3 x15, cuda-EvtHandlr' from the threads' comm."""
    names = {}
    for tid in tids:
        try:
            with open("/proc/self/task/%s/comm" % tid) as f:
                name = f.read().strip()
        except OSError:
            name = "?"
        names[name] = names.get(name, 0) + 1
    return ", ".join(n + (" x%d" % c if c > 1 else "") for n, c in sorted(names.items()))


def _probe_fork():
    """Forks once, the child exiting at once, so that libraries that stop
    their thread pools before a fork (OpenBLAS under numpy registers a
    pthread_atfork handler that joins its workers; Python's
    os.register_at_fork hooks) have done so: threads left after it are
    ones a fork would copy. False when the child did not end in time."""
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    for _ in range(_PROBE_S * 100):
        if os.waitpid(pid, os.WNOHANG)[0]:
            return True
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return False


# ---- The server -------------------------------------------------------------------

def _libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _join_cgroup(pid):
    """Into the client's cgroup (cgroup v2), so kiln's containment sees
    the child as the test's; best effort."""
    try:
        with open("/proc/%d/cgroup" % pid) as f:
            for line in f:
                if line.startswith("0::"):
                    path = "/sys/fs/cgroup" + line[3:].strip()
                    with open(path + "/cgroup.procs", "w") as p:
                        p.write("0")
    except OSError:
        pass


def _child(req, fds, libc):
    """In the forked child: become the test's process, run it, exit."""
    try:
        os.setpgid(0, req["pgid"])
    except OSError:
        pass
    if libc is not None:
        libc.prctl(1, signal.SIGKILL)          # PR_SET_PDEATHSIG: die with the zygote
    _join_cgroup(req["pid"])
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD,
                signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)
    for want, fd in zip(req["fds"], fds):
        if fd != want:
            os.dup2(fd, want)
    for fd in fds:
        if fd not in req["fds"]:
            os.close(fd)
    for fd in (0, 1, 2, 3):
        if fd not in req["fds"]:
            try:
                os.close(fd)
            except OSError:
                pass
    os.environ.clear()
    os.environ.update(req["env"])
    os.environ["KILN_PYTEST_START"] = "zygote"
    os.chdir(req["cwd"])
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = os.fdopen(2, "w", buffering=1)
    code = 3
    try:
        from . import __main__ as m
        opts, rest = m.run_opts(req["argv"])
        code = m.run_here(opts, rest)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:
        import traceback
        traceback.print_exc()
    finally:
        try:
            _exit_as_interpreter()
        finally:
            os._exit(code)


def _exit_as_interpreter():
    """What an interpreter does on its way out, which os._exit skips: wait
    for the threads that are no daemons, then run the atexit handlers
    (multiprocessing's joins the children that are no daemons, as pytest
    alone would wait for them), then flush."""
    import atexit
    import threading
    try:
        threading._shutdown()
    except Exception:
        pass
    try:
        atexit._run_exitfuncs()
    except Exception:
        pass
    sys.stdout.flush()
    sys.stderr.flush()


def serve(argv):
    from .__main__ import _opts
    opts, paths = _opts(argv, ("--socket", "--rootdir", "--preload"))
    path = opts.get("--socket")
    if not path:
        print("kiln_pytest zygote: --socket PATH is required", file=sys.stderr)
        return 2
    rootdir = os.path.abspath(opts.get("--rootdir") or ".")
    os.chdir(rootdir)
    if rootdir not in sys.path:
        sys.path.insert(0, rootdir)
    # Listen first: clients that come during the imports wait in the backlog.
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(path)
    except OSError:
        pass
    srv.bind(path + ".new")
    srv.listen(256)
    os.rename(path + ".new", path)
    wanted = [m for m in (opts.get("--preload") or "").split(",") if m]
    wanted += [m for m in dependencies(paths or ["."], rootdir) if m not in wanted]
    imported = []
    for name in ["pytest", "_pytest.main", "_pytest.python", "_pytest.fixtures"] + wanted:
        try:
            __import__(name)
            imported.append(name)
        except BaseException as e:   # the test that needs it says so itself
            print("kiln_pytest zygote: import %s: %s" % (name, e), file=sys.stderr)
    from . import plugin  # noqa: F401  (the children's)
    why = unfit()
    print("kiln_pytest zygote: imported %s; %s" % (",".join(imported) or "nothing",
          "unfit: " + why if why else "forking"), file=sys.stderr, flush=True)
    libc = _libc()
    r, w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(w)
    signal.signal(signal.SIGCHLD, lambda *a: None)
    sel = selectors.DefaultSelector()
    sel.register(srv, selectors.EVENT_READ, "accept")
    sel.register(r, selectors.EVENT_READ, "child")
    kids = {}          # pid -> client socket
    while True:
        for key, _ in sel.select():
            if key.data == "accept":
                conn, _ = srv.accept()
                try:
                    msg, fds, _, _ = socket.recv_fds(conn, _MAX_MSG, 8)
                    n = struct.unpack("!I", msg[:4])[0]
                    body = msg[4:]
                    while len(body) < n:
                        more = conn.recv(n - len(body))
                        if not more:
                            raise EOFError
                        body += more
                    req = json.loads(body)
                except (OSError, EOFError, ValueError, struct.error):
                    conn.close()
                    continue
                if why:
                    conn.sendall(("unfit %s\n" % why).encode())
                    conn.close()
                    for fd in fds:
                        os.close(fd)
                    continue
                pid = os.fork()
                if pid == 0:
                    srv.close()
                    for c in kids.values():
                        c.close()
                    os.close(r), os.close(w)
                    conn.close()
                    _child(req, fds, libc)
                for fd in fds:
                    os.close(fd)
                try:                 # as the child does: whichever comes first
                    os.setpgid(pid, req["pgid"])
                except OSError:
                    pass
                try:
                    conn.sendall(("pid %d\n" % pid).encode())
                except OSError:
                    pass
                kids[pid] = conn
                sel.register(conn, selectors.EVENT_READ, pid)
            elif key.data == "child":
                try:
                    while os.read(r, 512):
                        pass
                except BlockingIOError:
                    pass
                while kids:
                    try:
                        pid, status = os.waitpid(-1, os.WNOHANG)
                    except ChildProcessError:
                        break
                    if pid == 0:
                        break
                    conn = kids.pop(pid, None)
                    if conn is not None:
                        sel.unregister(conn)
                        try:
                            conn.sendall(("status %d\n" % status).encode())
                        except OSError:
                            pass
                        conn.close()
            else:
                # A client's socket: readable only when it went away.
                pid, conn = key.data, key.fileobj
                try:
                    if conn.recv(1):
                        continue
                except OSError:
                    pass
                sel.unregister(conn)
                conn.close()
                kids[pid] = None
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
