"""python3 -m kiln_pytest collect|run|zygote: what kiln starts.

  collect [--rootdir DIR] [--cache DIR] PATH...
                                    the listing on stdout, per path: a
                                    `pytest` record (path, cached, key,
                                    unkept: why a listing is not kept,
                                    missed: why the one kept was not used),
                                    then a `test` record per item; every
                                    path in this interpreter, each kept in
                                    (and taken from) the cache folder
  run [--zygote SOCKET] --result-fd N [--rootdir DIR] [--worker [--pull PATH]...] NODEID...
                                    one test, its records on fd N; through
                                    the zygote at SOCKET when it is there
                                    and fit, else here; --worker: every
                                    node id in one session, checked
                                    between two (worker.py); --pull: PATH
                                    (a source; repeated: each the worker
                                    serves) collected, and more ids
                                    asked of kiln on stdin
  zygote --socket PATH [--rootdir DIR] PATH...
                                    imports the tests' dependencies, then
                                    forks a child per `run` that asks

Everything pytest itself prints goes to stderr (collect) or the test's
log (run). Exit status: collect 0, 3 when pytest could not collect, 2 for
a bad kiln mark; run: pytest's.
"""
import os
import sys


def _pytest_args(rootdir):
    args = ["-p", "no:cacheprovider", "-s", "-q", "-o", "console_output_style=classic"]
    if rootdir:
        args += ["--rootdir", rootdir]
    # A suite whose addopts say -n N runs each test here, not in workers.
    if not os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        import importlib.util
        if importlib.util.find_spec("xdist") is not None:
            args += ["-n", "0"]
    return args


def _opts(argv, known, repeated=()):
    """The options in known, by name (those in repeated: a list of every
    value given), and the other words."""
    opts, rest = {k: [] for k in repeated}, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            rest += argv[i + 1:]
            break
        if a in known:
            if i + 1 >= len(argv):
                sys.exit("kiln_pytest: %s needs a value" % a)
            if a in repeated:
                opts[a].append(argv[i + 1])
            else:
                opts[a] = argv[i + 1]
            i += 2
            continue
        if a.startswith("--") and a.split("=", 1)[0] in known and "=" in a:
            k, v = a.split("=", 1)
            if k in repeated:
                opts[k].append(v)
            else:
                opts[k] = v
        else:
            rest.append(a)
        i += 1
    return opts, rest


def _collect_one(path, rootdir):
    """One path's pytest session here: its entry (header, lines, what it
    read) and whether it may be kept; (None, status) when it failed."""
    import io
    import pytest
    from . import listing, plugin
    text = io.StringIO()
    c = plugin.Collector(text)
    before, syspath = set(sys.modules), list(sys.path)
    with listing.EnvReads() as env:
        code = pytest.main(_pytest_args(rootdir) + ["--collect-only", path], plugins=[c])
    if c.errors:
        for e in c.errors:
            print("kiln_pytest: " + e, file=sys.stderr)
        return None, 2
    if code not in (0, 5) and c.n == 0:
        print("kiln_pytest: pytest could not collect %s (exit status %d)"
              % (path, int(code)), file=sys.stderr)
        return None, 3
    entry = {"path": path, "header": c.header, "lines": text.getvalue(),
             "environ": env.read}
    keep = c.broken == 0
    root = c.header and c.header.get("rootdir")
    full = os.path.abspath(path)
    listing.forget_project(before, [root, full if os.path.isdir(full) else
                                    os.path.dirname(full)])
    sys.path[:] = syspath
    return (entry, keep), 0


def collect(argv):
    """Every path's listing in turn, each from the cache when it holds a
    good entry, else collected here; status 0, or the first failure's."""
    opts, paths = _opts(argv, ("--rootdir", "--cache"))
    # Records on the real stdout; pytest's console and the tests' prints
    # on stderr.
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    from . import listing, records
    rootdir, cache = opts.get("--rootdir"), opts.get("--cache")
    for path in paths:
        k, hashed = listing.key(path, rootdir)
        entry, why = listing.load(cache, k) if cache else (None, "no cache")
        cached, unkept = entry is not None, None
        # Why a listing kept under this key could not be used (none kept
        # under it is no news: a changed tree has a new key).
        missed = why if not cached and why not in ("none kept", "no cache") else None
        if not cached:
            got, status = _collect_one(path, rootdir)
            if got is None:
                return status
            entry, keep = got
            if not cache:
                unkept = "no cache folder"
            elif not keep:
                unkept = "a module did not import"
            else:
                entry["modules"] = listing.modules_read(hashed)
                listing.prune(cache)
                unkept = listing.store(cache, k, entry)
        out.write(records.line("pytest", path=path, cached=int(cached), key=k,
                               unkept=unkept, missed=missed, **(entry["header"] or {})))
        out.write(entry["lines"])
    out.flush()
    return 0


def run_here(opts, rest):
    """The node id (or, with --worker, every node id) in this process;
    pytest's exit status."""
    import pytest
    from . import plugin
    fd = int(opts.get("--result-fd", "3"))
    if "--worker" in rest:
        return _run_worker(fd, opts, [a for a in rest if a != "--worker"])
    nodeid = rest[-1] if rest else ""
    r = plugin.Reporter(fd, os.environ.get("KILN_TEST"))
    code = pytest.main(_pytest_args(opts.get("--rootdir")) + rest, plugins=[r])
    r.finish_without_test(code, nodeid)
    sys.stdout.flush()
    sys.stderr.flush()
    return int(code)


def _run_worker(fd, opts, nodeids):
    import pytest
    from . import worker
    # --pull SOURCE (repeated: the sources one worker serves): each is
    # collected whole, so that any of their node ids kiln adds later is
    # there.
    pull = opts.get("--pull") or []
    w = worker.Worker(fd, nodeids, bool(pull))
    args = _pytest_args(opts.get("--rootdir")) + ["--continue-on-collection-errors"]
    code = pytest.main(args + (pull or worker.files(nodeids)), plugins=[w])
    w.finish(code)
    sys.stdout.flush()
    sys.stderr.flush()
    return int(code)


RUN_OPTS = ("--result-fd", "--rootdir", "--zygote", "--pull")


def run_opts(argv):
    """`run`'s options and node ids (here, or in a zygote's child)."""
    return _opts(argv, RUN_OPTS, repeated=("--pull",))


def run(argv):
    opts, rest = run_opts(argv)
    sock = opts.get("--zygote")
    if sock:
        from . import zygote
        why = zygote.delegate(sock, argv)   # returns only when it did not
        if why:
            print("kiln_pytest: a fresh interpreter: %s" % why, file=sys.stderr)
            os.environ["KILN_PYTEST_START"] = "fresh: " + why
    return run_here(opts, rest)


def main(argv):
    if not argv or argv[0] not in ("collect", "run", "zygote"):
        print(__doc__, file=sys.stderr)
        return 2
    if argv[0] == "collect":
        return collect(argv[1:])
    if argv[0] == "run":
        return run(argv[1:])
    from . import zygote
    return zygote.serve(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
