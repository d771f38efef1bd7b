"""The pytest plugin kiln loads: marks at collection, records per test.

Collection (`collect`): each item's node id, file and line, and what its
`kiln` mark asks for, as `test` records of kiln's listing. Running
(`run`): pytest's own reports of the one node id made into the records
kiln reads from every test (test, phase, note, result, end), so kiln
decides and reports a pytest test as any other.
"""
import os

import pytest

from . import records

MARK_HELP = ("kiln(slots=N|'all', gpus=N, gpu=False, timeout=S): what the test "
             "needs from kiln (docs/pytest.md)")

# Marks that say how pytest runs a test, not what it is about: not tags.
_NOT_TAGS = frozenset(("parametrize", "skip", "skipif", "xfail", "usefixtures",
                       "filterwarnings", "kiln", "timeout"))


class MarkError(Exception):
    pass


def _int(value, what, lo, hi, where):
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise MarkError("%s: kiln mark: %s=%r must be an integer from %d to %d"
                        % (where, what, value, lo, hi))
    return value


def needs(item, where):
    """(slots, devices, needs_gpu, timeout_s) from the item's kiln marks,
    the closest first (a function's over its class's and module's)."""
    got = {}
    for mark in item.iter_markers("kiln"):
        if mark.args:
            raise MarkError("%s: kiln mark takes keywords only (slots=, gpus=, gpu=, "
                            "timeout=), not %r" % (where, mark.args))
        for key, value in mark.kwargs.items():
            if key not in ("slots", "gpus", "gpu", "timeout"):
                raise MarkError("%s: kiln mark: unknown keyword '%s' (known: slots, "
                                "gpus, gpu, timeout)" % (where, key))
            got.setdefault(key, value)
    slots = got.get("slots", 1)
    slots = -1 if slots == "all" else _int(slots, "slots", 1, 1024, where)
    devices = _int(got.get("gpus", 1), "gpus", 0, 64, where)
    gpu = got.get("gpu", True)
    if not isinstance(gpu, bool):
        raise MarkError("%s: kiln mark: gpu=%r must be True or False" % (where, gpu))
    needs_gpu = 1 if gpu and devices > 0 else 0
    timeout = got.get("timeout")
    if timeout is None:          # pytest-timeout's mark, when a suite has it
        t = item.get_closest_marker("timeout")
        timeout = t.args[0] if t and t.args else (t.kwargs.get("timeout") if t else None)
        timeout = int(timeout) if isinstance(timeout, (int, float)) and timeout >= 1 else 0
    else:
        timeout = _int(timeout, "timeout", 1, 604800, where)
    return slots, max(devices, 1), needs_gpu, timeout


def _tags(item):
    seen = []
    for mark in item.iter_markers():
        name = mark.name
        if name in _NOT_TAGS or name in seen or not name or name[0] in "-@":
            continue
        if all(c.isalnum() or c in "_.-" for c in name):
            seen.append(name)
    return ",".join(seen)


class Collector:
    """`collect`: the listing, written to out (a file object)."""

    def __init__(self, out):
        self.out = out
        self.errors = []
        self.n = 0
        self.broken = 0          # modules that did not import
        self.header = None       # the `pytest` record's fields

    def pytest_configure(self, config):
        config.addinivalue_line("markers", MARK_HELP)
        import sys
        self.header = dict(protocol=records.PROTOCOL, pytest=pytest.__version__,
                           python=sys.executable, rootdir=str(config.rootpath))

    def pytest_collectreport(self, report):
        # A module that does not import is listed as a test of its own, so
        # that the run shows it as an error instead of losing its tests.
        if report.failed:
            self.broken += 1
            self._test(report.nodeid, "collect_error", 1, 1, 0, 0,
                       report.nodeid.split("::")[0], 0)

    def pytest_collection_modifyitems(self, session, config, items):
        for item in items:
            path, line, _ = item.location
            where = "%s:%s" % (path, (line or 0) + 1)
            try:
                slots, devices, needs_gpu, timeout = needs(item, where)
            except MarkError as e:
                self.errors.append(str(e))
                continue
            self._test(item.nodeid, _tags(item), slots, devices, needs_gpu, timeout, path,
                       (line or 0) + 1)

    def _test(self, nodeid, tags, slots, devices, needs_gpu, timeout, path, line):
        suite, _, name = nodeid.partition("::")
        self.out.write(records.line("test", id=nodeid, suite=suite, name=name or suite,
                                    tags=tags, slots=slots, devices=devices,
                                    timeout_s=timeout, needs_gpu=needs_gpu, file=path,
                                    line=line))
        self.n += 1


def _rel(path, rootdir):
    path = str(path)
    try:
        rel = os.path.relpath(path, rootdir)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _where(report, rootdir):
    """(message, file, line) of a failed report: the exception's own line
    as message, located at the deepest frame inside the project (a test's
    assert_close call, not the library line that raised)."""
    longrepr = report.longrepr
    crash = getattr(longrepr, "reprcrash", None)
    if crash is None:
        text = str(longrepr) if longrepr is not None else ""
        return text.strip().splitlines()[-1] if text.strip() else "failed", "", 0
    message, path, line = crash.message, crash.path, crash.lineno
    entries = getattr(getattr(longrepr, "reprtraceback", None), "reprentries", [])
    for entry in reversed(entries):
        loc = getattr(entry, "reprfileloc", None)
        if loc is None:
            continue
        rel = _rel(loc.path, rootdir)
        if not os.path.isabs(rel) and "site-packages" not in rel:
            path, line = loc.path, loc.lineno
            break
    return message, _rel(path, rootdir), line


def collected_apart(nodeid, collected):
    """The error of a module's own id that now collects: listing could not
    collect it with the rest of its source, so kiln has no ids for its
    tests, and none of them ran."""
    ids = ", ".join(collected[:3]) + (", ..." if len(collected) > 3 else "")
    return ("collection: pytest could not collect this module when kiln listed it with the "
            "rest of its source, so its tests have no ids of their own and none ran; "
            "collected apart it holds %d test%s (%s). Its collection depends on the other "
            "files (two test files of one name in folders without __init__.py, for one: "
            "pytest's own run of the source fails the same way); `kiln list` shows it as "
            "collect_error" % (len(collected), "" if len(collected) == 1 else "s", ids))


class Reporter:
    """`run`: pytest's reports of the test as kiln's records on fd."""

    def __init__(self, fd, test_id=None):
        self.sink = records.Sink(fd)
        self.test_id = test_id
        self.started = False
        self.ended = False
        self.collect_error = None
        self.collected_apart = None  # a module's own id: what it holds now
        self.interrupt = None
        self.reports = {}
        self.rootdir = os.getcwd()

    def pytest_configure(self, config):
        config.addinivalue_line("markers", MARK_HELP)
        self.rootdir = str(config.rootpath)

    def pytest_collectreport(self, report):
        if report.failed and self.collect_error is None:
            self.collect_error = report

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items):
        # A module's own id (no "::") is in the listing only because the
        # module did not collect there. Alone it may: its first test is
        # not the module's verdict, so nothing runs and it is an error.
        if self.test_id and "::" not in self.test_id and items:
            self.collected_apart = [item.nodeid for item in items]
            config.hook.pytest_deselected(items=list(items))
            items[:] = []

    def _start(self, nodeid):
        if not self.started:
            self.started = True
            self.sink.send("test", id=self.test_id or nodeid, pid=os.getpid())
            self.sink.send("note", key="pytest_start",
                           value=os.environ.get("KILN_PYTEST_START", "fresh"))

    def pytest_runtest_logstart(self, nodeid, location):
        if self.started:       # one test per process: a second is not kiln's
            return
        self._start(nodeid)

    def pytest_runtest_logreport(self, report):
        if not self.ended:
            self.reports[report.when] = report

    def pytest_runtest_logfinish(self, nodeid, location):
        if self.started and not self.ended:
            self._finish()

    def _finish(self, notes=()):
        r = self.reports
        setup, call, teardown = r.get("setup"), r.get("call"), r.get("teardown")
        if setup is not None:
            self.sink.send("note", key="pytest_setup_ms", value="%.3f" % (setup.duration * 1e3))
        if call is not None:
            self.sink.send("phase", name="body", ms=call.duration * 1e3)
        if teardown is not None:
            self.sink.send("phase", name="teardown", ms=teardown.duration * 1e3)
        status, message, path, line = self._verdict(setup, call, teardown)
        for key, value in notes:
            self.sink.send("note", key=key, value=value)
        self.sink.send("result", status=status, message=message, file=path, line=line)
        self.sink.send("end")
        self.ended = True

    def _verdict(self, setup, call, teardown):
        note = lambda v: self.sink.send("note", key="pytest_outcome", value=v)
        if setup is not None and setup.failed:
            m, f, l = _where(setup, self.rootdir)
            return "error", "setup: " + m, f, l
        if setup is not None and setup.skipped:
            return self._skip(setup, note)
        status, message, path, line = "pass", "", "", 0
        if call is not None and call.skipped:
            status, message, path, line = self._skip(call, note)
        elif call is not None and call.failed:
            message, path, line = _where(call, self.rootdir)
            status = "fail"
        elif call is not None and hasattr(call, "wasxfail"):
            note("xpassed")
            message = "xpassed" + (": " + call.wasxfail if call.wasxfail else "")
        if teardown is not None and teardown.failed:
            m, f, l = _where(teardown, self.rootdir)
            if status == "fail":
                self.sink.send("note", key="pytest_teardown", value=m)
            else:
                return "error", "teardown: " + m, f, l
        return status, message, path, line

    def _skip(self, report, note):
        if hasattr(report, "wasxfail"):
            note("xfailed")
            return "skip", "xfailed" + (": " + report.wasxfail if report.wasxfail else ""), "", 0
        longrepr = report.longrepr
        if isinstance(longrepr, tuple) and len(longrepr) == 3:
            path, line, reason = longrepr
            if reason.startswith("Skipped: "):
                reason = reason[len("Skipped: "):]
            return "skip", reason or "skipped", _rel(path, self.rootdir), line or 0
        return "skip", str(longrepr) if longrepr else "skipped", "", 0

    def pytest_keyboard_interrupt(self, excinfo):
        # pytest.exit() or KeyboardInterrupt: pytest ends the session here.
        self.interrupt = excinfo

    def _interrupted(self):
        """(message, file, line) of the stop that ended pytest inside the
        test: pytest.exit() or a KeyboardInterrupt, where it was raised."""
        e = self.interrupt
        if isinstance(e.value, pytest.exit.Exception):
            what = "the test called pytest.exit(%r)" % getattr(e.value, "msg", str(e.value))
        else:
            what = "%s during the test" % e.typename
        path, line = "", 0
        for entry in reversed(list(e.traceback)):
            rel = _rel(entry.path, self.rootdir)
            if not os.path.isabs(rel) and "site-packages" not in rel:
                path, line = rel, entry.lineno + 1
                break
        return what + ": pytest ended its session there", path, line

    def finish_without_test(self, exitcode, nodeid):
        """pytest ended without finishing the test: why, as the test's
        error (exitcode None: a worker's session ran on without it)."""
        if self.ended:
            return
        started = self.started
        self._start(nodeid)
        status = "" if exitcode is None else ", exit status %s" % int(exitcode)
        if started and self.interrupt is not None:
            message, path, line = self._interrupted()
        elif self.collect_error is not None:
            message, path, line = _where(self.collect_error, self.rootdir)
            message = "collection: " + message
        elif self.collected_apart:
            message, path, line = collected_apart(nodeid, self.collected_apart), nodeid, 0
        elif started:
            message, path, line = ("pytest ended during the test without its report%s"
                                   % status), "", 0
        elif exitcode is None:
            message, path, line = ("pytest collected no test for this id (not found, or "
                                   "deselected)"), "", 0
        else:
            message, path, line = ("pytest ran no test for this id (exit status %s: not "
                                   "found, or deselected)" % int(exitcode)), "", 0
        self.sink.send("result", status="error", message=message, file=path, line=line)
        self.sink.send("end")
        self.ended = True
