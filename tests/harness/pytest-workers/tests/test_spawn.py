"""A test that starts a process the way torch.multiprocessing.spawn does
(the spawn start method), joined at its end: multiprocessing keeps its
resource tracker running for the interpreter's life, as every later test
that spawns uses it, so it is nothing the test left. Then a test after it
in the same worker, and one that leaves a spawned process running."""
import multiprocessing as mp
import time


def _work():
    pass


def test_spawns_and_joins():
    p = mp.get_context("spawn").Process(target=_work)
    p.start()
    p.join()
    assert p.exitcode == 0


def test_after_the_spawn():
    pass


def test_spawn_left():
    mp.get_context("spawn").Process(target=time.sleep, args=(600,), daemon=True).start()
