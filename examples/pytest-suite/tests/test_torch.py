"""The same kernel against PyTorch where it is installed (on the GPU
where torch sees one): a suite whose modules import torch, which is what
the zygote saves an interpreter per test from."""
import random

import pytest

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("rows,cols", [(4, 256), (16, 1000)])
def test_matches_torch(ctx, rows, cols):
    rnd = random.Random(rows * cols)
    x = [[rnd.gauss(0.0, 3.0) for _ in range(cols)] for _ in range(rows)]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    want = torch.softmax(torch.tensor(x, dtype=torch.float64, device=device), dim=-1)
    got = torch.tensor(ctx.softmax(x), dtype=torch.float64, device=device)
    torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5)
