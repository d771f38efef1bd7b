"""A child process pytest waits for at the interpreter's exit: a
multiprocessing child that is no daemon, started and not joined, which
multiprocessing's exit handler joins. It lives 3 s, longer than the 1 s
kiln gives a test's pipes to close after its process ended, so a process
that skipped the handler leaves it running."""
import multiprocessing
import time


def test_child_not_joined():
    multiprocessing.Process(target=time.sleep, args=(3,)).start()
