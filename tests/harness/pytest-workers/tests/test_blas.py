"""A suite of linear layers: CUDA initialised at import (as a suite whose
modules touch the device do), and a first test that multiplies, which in
torch allocates the matrix library's workspace for the process. Neither
test leaves anything of its own: both run in one worker."""
import torch

torch.cuda.init()


def test_first_matmul():
    a = torch.ones(4, 4, device="cuda")
    torch.mm(a, a)


def test_next():
    a = torch.ones(4, 4, device="cuda")
    torch.addmm(a, a, a)
