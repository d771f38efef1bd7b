"""`run --worker`: one pytest session runs a sequence of node ids (kiln's
--isolation worker), each test's records on the result fd as it ends,
the same records a process of one test sends (a `test` record moves kiln
on to the next run of the sequence).

pytest is given the node ids' files (each once, those that exist) and
runs, in the order kiln gave, exactly the items of those ids; the rest of
the files' items are deselected. Between two tests the worker checks what
the last one left behind (checks.py); a test that left something gets a
`worker_check` note before its result, and the session stops after it:
kiln gives the ids not yet begun to a new worker. An id pytest did not
collect is an error at its turn in the sequence (`collection: ...` when
its module did not import), as it is for a process of its own. When the
session ends early (the check, `pytest -x`, a test that called
pytest.exit or raised KeyboardInterrupt, a usage error before any test),
the ids not begun get no record: kiln runs them elsewhere.

With --pull SOURCE (kiln's `more`; repeated for every source the worker
serves), pytest collects each source whole (its folder or file) and the
sequence may grow: before its last test the worker writes a `more` record
and reads node ids of those sources from stdin, a line each up to an empty line (none: the session ends after
that test). Every item was collected and the others deselected, so an id
kiln adds runs without collecting again; one pytest did not collect is
an error at its turn, as any.
"""
import os

import pytest

from . import checks, plugin, records


def files(nodeids):
    """The files (or folders) of the node ids, each once, in order: what
    pytest collects. A missing one is left out, so that it fails alone at
    its turn instead of pytest refusing the whole session."""
    out = []
    for nid in nodeids:
        path = nid.split("::", 1)[0]
        if path not in out and os.path.exists(path):
            out.append(path)
    return out


class Worker:
    """The plugin of a worker's session."""

    def __init__(self, fd, nodeids, pull=False):
        self.fd = fd
        # stdin as kiln gave it, before pytest's capture points fd 0 at
        # /dev/null: kiln answers `more` on it.
        self.asks = os.dup(0) if pull else -1
        self.all = {}              # pull: every item collected, by node id
        self.done_asking = not pull
        self.wanted = list(nodeids)
        self.pos = {}
        for i, nid in enumerate(self.wanted):
            self.pos.setdefault(nid, i)
        self.next = 0              # the first wanted position not yet reported
        self.have = set()          # wanted positions pytest collected
        self.cur = None            # the running test's reporter
        self.rootdir = os.getcwd()
        self.collect_errors = []
        self.apart = {}            # a module's own id: the items it holds now
        self.session = None
        self.stopped = None        # what ended the sequence early

    # ---- pytest's hooks ----------------------------------------------------------------

    def pytest_configure(self, config):
        config.addinivalue_line("markers", plugin.MARK_HELP)
        self.rootdir = str(config.rootpath)

    def pytest_sessionstart(self, session):
        self.session = session

    def pytest_collectreport(self, report):
        if report.failed:
            self.collect_errors.append(report)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items):
        keep, drop = {}, []
        if not self.done_asking:
            for item in items:
                self.all.setdefault(item.nodeid, item)
        for item in items:
            i = self.pos.get(item.nodeid)
            if i is None or i in keep:
                drop.append(item)
                module = item.nodeid.split("::", 1)[0]
                if module in self.pos:
                    self.apart.setdefault(module, []).append(item.nodeid)
            else:
                keep[i] = item
        if drop:
            config.hook.pytest_deselected(items=drop)
        items[:] = [keep[i] for i in sorted(keep)]
        self.have = set(keep)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        at = self.pos.get(item.nodeid, self.next)
        self._uncollected(at)
        kid = records.kiln_id(item.nodeid)
        os.environ["KILN_TEST"] = kid
        cur = self.cur = plugin.Reporter(self.fd, kid)
        cur.rootdir = self.rootdir
        state = checks.before()
        outcome = yield
        self.next = max(self.next, at + 1)
        if outcome.excinfo is not None or not cur.started or cur.ended:
            return                 # stopped inside the test: finish() says so
        self.cur = None
        found = checks.left_behind(state)
        notes = []
        if found:
            what = "; ".join(phrase for _, phrase in found)
            notes.append(("worker_check", what))
            self.stopped = "the test left " + what
            self.session.shouldstop = "kiln_pytest worker: " + self.stopped
        cur._finish(notes)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session):
        """pytest's loop over the items, asking kiln for more before the
        last one (so that its teardown knows the next)."""
        if self.done_asking or session.config.option.collectonly:
            return None
        items, i = session.items, 0
        while True:
            if i >= len(items) - 1 and not self.done_asking:
                self._ask(items)
            if i >= len(items):
                return True
            nextitem = items[i + 1] if i + 1 < len(items) else None
            items[i].config.hook.pytest_runtest_protocol(item=items[i], nextitem=nextitem)
            if session.shouldfail:
                raise session.Failed(session.shouldfail)
            if session.shouldstop:
                raise session.Interrupted(session.shouldstop)
            i += 1

    def _ask(self, items):
        """Asks kiln for more node ids; adds those pytest collected to
        items, and every one to the sequence (an id not collected is an
        error at its turn)."""
        got = []
        if not (self.stopped or self.session.shouldstop):
            os.write(self.fd, b"more\n")
            buf = b""
            while b"\n\n" not in b"\n" + buf:
                chunk = os.read(self.asks, 65536)
                if not chunk:
                    break
                buf += chunk
            got = [line for line in buf.decode().split("\n") if line]
        for nid in got:
            i = len(self.wanted)
            self.wanted.append(nid)
            if self.pos.setdefault(nid, i) != i:
                continue           # twice in one sequence: kiln never does
            item = self.all.get(nid)
            if item is not None:
                items.append(item)
                self.have.add(i)
        if not got:
            self.done_asking = True

    def pytest_runtest_logstart(self, nodeid, location):
        if self.cur is not None:
            self.cur.pytest_runtest_logstart(nodeid, location)

    def pytest_runtest_logreport(self, report):
        if self.cur is not None:
            self.cur.pytest_runtest_logreport(report)

    def pytest_keyboard_interrupt(self, excinfo):
        if self.cur is not None:
            self.cur.pytest_keyboard_interrupt(excinfo)

    # ---- The ids pytest ran no test for ----------------------------------------------------

    def _uncollected(self, upto):
        """Errors for the wanted ids before position upto that pytest did
        not collect, in their order."""
        for i in range(self.next, upto):
            if i in self.have or self.pos.get(self.wanted[i]) != i:
                continue
            nid = self.wanted[i]
            r = plugin.Reporter(self.fd, records.kiln_id(nid))
            r.rootdir = self.rootdir
            err = self._collect_error(nid)
            if err is not None:
                r.collect_error = err
            r.collected_apart = self.apart.get(nid)
            r.finish_without_test(None, nid)
        self.next = max(self.next, upto)

    def _collect_error(self, nid):
        best = None
        for rep in self.collect_errors:
            n = rep.nodeid
            if nid == n or nid.startswith(n + "::") or nid.startswith(n.rstrip("/") + "/") \
                    or not n:
                if best is None or len(n) > len(best.nodeid):
                    best = rep
        return best

    def finish(self, code):
        """After the session: a test it was stopped in, and the ids it
        never reached when it ran to its end."""
        if self.cur is not None and self.cur.started and not self.cur.ended:
            self.cur.finish_without_test(code, self.cur.test_id)
            return
        s = self.session
        if self.stopped or s is None or s.shouldstop or s.shouldfail:
            return
        if int(code) not in (int(pytest.ExitCode.OK), int(pytest.ExitCode.TESTS_FAILED),
                             int(pytest.ExitCode.NO_TESTS_COLLECTED)):
            return                 # pytest failed as a whole: kiln runs them alone
        self._uncollected(len(self.wanted))
