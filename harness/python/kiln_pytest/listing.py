"""The listing of `collect`: every path in one interpreter, kept in a cache.

Each path is collected by a pytest session of its own (its own rootdir,
ini file and conftest.py files, as a `collect` of that path alone), one
after another in this one interpreter, so that what the test modules
import from outside the project (torch, say) is imported once for all of
them. Between two sessions the modules of the project are forgotten, so
the next session imports its own test modules and conftest.py afresh.

A path's listing is kept in the cache folder as <key>.json. The key is a
hash of what decides the collection before it runs: the path as given and
the working folder, the interpreter (sys.executable and its version),
kiln_pytest's own files, the contents of every .py file and ini file under
the path (its names too: a new test file changes the key), and
conftest.py, __init__.py, pytest.ini, pyproject.toml, setup.cfg and tox.ini
in each folder above it. An entry also names what the collection read that
the key cannot know beforehand, checked before it is used: every module
file it had imported (size and modification time: pytest, its plugins, the
project's own modules) and every environment variable it read (its value
or its absence). An entry that fails a check is a miss, and the new
listing replaces it. A listing with a module that did not import is never
kept, and an entry no run used for 30 days is removed.
"""
import hashlib
import json
import os
import sys

FORMAT = 1
KEEP_DAYS = 30          # an entry no run used for this long is removed
CONFIGS = ("conftest.py", "__init__.py", "pytest.ini", "pyproject.toml", "setup.cfg",
           "tox.ini")
INIS = ("pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini")


def _file_digest(path):
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError as e:
        return "unreadable:%s" % e.__class__.__name__
    return h.hexdigest()


def _tree(path):
    """Every .py and ini file under path (a folder) or path itself, sorted,
    hidden folders and __pycache__ left out."""
    if not os.path.isdir(path):
        return [path]
    files = []
    for top, dirs, names in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        files += [os.path.join(top, n) for n in sorted(names)
                  if n.endswith(".py") or n in INIS]
    return files


def _package_files():
    here = os.path.dirname(os.path.abspath(__file__))
    return [os.path.join(here, n) for n in sorted(os.listdir(here)) if n.endswith(".py")]


def key(path, rootdir):
    """The path's key, and the files its contents hashed (whose modules the
    entry need not check again)."""
    h = hashlib.sha256()

    def add(*words):
        for w in words:
            h.update(str(w).encode("utf-8", "surrogateescape") + b"\0")

    add("kiln_pytest listing", FORMAT, os.getcwd(), path, rootdir or "",
        sys.executable, sys.version)
    for f in _package_files():
        add("plugin", os.path.basename(f), _file_digest(f))
    full = os.path.abspath(path)
    hashed = set()
    if os.path.exists(full):
        for f in _tree(full):
            add("file", os.path.relpath(f, full), _file_digest(f))
            hashed.add(os.path.realpath(f))
    else:
        add("missing")
    d = os.path.dirname(full)
    while True:
        for n in CONFIGS:
            f = os.path.join(d, n)
            add("above", f, _file_digest(f) if os.path.isfile(f) else "absent")
        up = os.path.dirname(d)
        if up == d:
            break
        d = up
    return h.hexdigest(), hashed


# ---- What a session read ---------------------------------------------------------------


class EnvReads:
    """The environment variables read while it is on, with the values they
    had; a variable this process set itself is not the outer environment's
    and is left out."""

    def __init__(self):
        self.read, self.written = {}, set()

    def __enter__(self):
        cls, reads = os._Environ, self
        self.saved = cls.__getitem__, cls.__setitem__, cls.__delitem__
        get, put, drop = self.saved

        def getitem(env, k):
            try:
                v = get(env, k)
            except KeyError:
                if k not in reads.written and isinstance(k, str):
                    reads.read.setdefault(k, None)
                raise
            if k not in reads.written and isinstance(k, str):
                reads.read.setdefault(k, v)
            return v

        def setitem(env, k, v):
            reads.written.add(k)
            return put(env, k, v)

        def delitem(env, k):
            reads.written.add(k)
            return drop(env, k)

        cls.__getitem__, cls.__setitem__, cls.__delitem__ = getitem, setitem, delitem
        return self

    def __exit__(self, *exc):
        os._Environ.__getitem__, os._Environ.__setitem__, os._Environ.__delitem__ = \
            self.saved
        return False


def _stat(f):
    try:
        st = os.stat(f)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def modules_read(hashed):
    """Every module file now imported, with its size and modification
    time, those the key hashed left out."""
    deps = {}
    for m in list(sys.modules.values()):
        f = getattr(m, "__file__", None)
        if not isinstance(f, str) or not f:
            continue
        real = os.path.realpath(f)
        if real in hashed or real in deps:
            continue
        st = _stat(real)
        if st is not None:
            deps[real] = st
    return deps


def forget_project(before, dirs):
    """Drops the modules imported since `before` whose files lie under one
    of dirs (the session's rootdir and path), site-packages left alone, so
    that the next session imports its own test modules and conftest.py."""
    dirs = [os.path.join(os.path.realpath(d), "") for d in dirs if d]
    for name in [n for n in sys.modules if n not in before]:
        f = getattr(sys.modules.get(name), "__file__", None)
        if not isinstance(f, str):
            continue
        real = os.path.realpath(f)
        if "site-packages" in real or "dist-packages" in real:
            continue
        if any(real.startswith(d) for d in dirs):
            del sys.modules[name]


# ---- The cache -------------------------------------------------------------------------


def load(folder, k):
    """The entry for key k when every check holds, else None (and why)."""
    path = os.path.join(folder, k + ".json")
    try:
        with open(path, encoding="utf-8") as f:
            e = json.load(f)
    except FileNotFoundError:
        return None, "none kept"
    except (OSError, ValueError) as err:
        return None, "%s does not read: %s" % (path, err)
    if not isinstance(e, dict) or e.get("format") != FORMAT or e.get("key") != k:
        return None, "%s is not an entry for this key" % path
    for f, st in e.get("modules", {}).items():
        if _stat(f) != st:
            return None, "%s changed" % f
    for name, v in e.get("environ", {}).items():
        if os.environ.get(name) != v:
            return None, "$%s changed" % name
    try:
        os.utime(path)          # used: kept from pruning
    except OSError:
        pass
    return e, None


def prune(folder, days=KEEP_DAYS):
    """Removes the entries no run used for `days`: every changed tree
    leaves one behind."""
    import time
    old = time.time() - days * 86400
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for n in names:
        f = os.path.join(folder, n)
        try:
            if n.endswith(".json") and os.stat(f).st_mtime < old:
                os.unlink(f)
        except OSError:
            pass


def store(folder, k, entry):
    """Keeps entry as folder/<k>.json (written whole, then renamed); the
    reason when it could not."""
    entry = dict(entry, format=FORMAT, key=k)
    path = os.path.join(folder, k + ".json")
    tmp = "%s.%d.tmp" % (path, os.getpid())
    try:
        os.makedirs(folder, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(entry, f)
        os.replace(tmp, path)
    except OSError as err:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return "%s: %s" % (path, err)
    return None
