"""Tests that leave something behind for the next test in a worker, each
between tests that leave nothing (a thread joined, a thread that ends by
itself within a moment, CUDA memory freed)."""
import subprocess
import threading
import time

import torch


def test_thread_joined():
    t = threading.Thread(target=time.sleep, args=(0.01,))
    t.start()
    t.join()


def test_thread_left():
    threading.Thread(target=time.sleep, args=(600,), name="left-behind", daemon=True).start()


def test_thread_ending():
    threading.Thread(target=time.sleep, args=(0.2,), name="ending").start()


def test_process_left():
    subprocess.Popen(["sleep", "600"])


def test_memory_freed():
    torch.cuda.allocate(1 << 20)
    torch.cuda.free(1 << 20)


def test_memory_left():
    torch.cuda.allocate(3 << 20)


def test_cuda_error_left():
    torch.cuda.fail("CUDA error: an illegal memory access was encountered")


def test_clean():
    pass
