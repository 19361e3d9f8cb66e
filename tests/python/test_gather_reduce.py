# tests/python/test_gather_reduce.py: gemmops.gather_reduce (the MoE combine) against a float64
# reference, sentinels and the row limit adding nothing, the GPU's bits equal to the host's, and errors
# naming the operand
# SPDX-License-Identifier: Apache-2.0
import pytest

torch = pytest.importorskip("torch")

import gemmops  # noqa: E402
from gemmops.torch import _combine  # noqa: E402


def problem(S=50, T=20, k=4, H=40, dtype=torch.bfloat16, seed=0):
    g = torch.Generator().manual_seed(seed)
    rows = torch.randn(S, H, generator=g).to(dtype)
    pair = torch.randint(0, S, (T, k), generator=g, dtype=torch.int32)
    pair[0, 1], pair[1, 0], pair[2, 2] = -1, S, S + 7  # sentinels
    scores = torch.rand(T, k, generator=g)
    return rows, pair, scores


def reference(rows, pair, scores, limit):
    out = torch.zeros(pair.shape[0], rows.shape[1], dtype=torch.float64)
    for t in range(pair.shape[0]):
        for j in range(pair.shape[1]):
            r = int(pair[t, j])
            if 0 <= r < limit:
                out[t] += (1.0 if scores is None else float(scores[t, j])) * rows[r].double()
    return out


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("weighted", [False, True])
def test_matches_float64_and_skips_sentinels_on_the_host(dtype, weighted):
    rows, pair, scores = problem(dtype=dtype)
    limit = torch.tensor([37], dtype=torch.int32)
    out = _combine.combine(rows, pair, scores if weighted else None, limit, out_dtype=torch.float32)
    want = reference(rows, pair, scores if weighted else None, 37)
    torch.testing.assert_close(out.double(), want, rtol=1e-5, atol=1e-5)
    again = _combine.combine(rows, pair, scores if weighted else None, limit, out_dtype=torch.float32)
    assert torch.equal(out, again)


def test_pair_rows_inverts_the_sort():
    ids = torch.tensor([[2, 0], [1, 2], [0, 0]])
    order = torch.sort(ids.reshape(-1), stable=True).indices
    pair = _combine.pair_rows(order, 3, 2)
    assert pair.dtype == torch.int32
    assert torch.equal(order[pair.long().reshape(-1)], torch.arange(6))


def test_errors_name_the_operand():
    rows, pair, scores = problem()
    out = torch.empty(pair.shape[0], rows.shape[1], dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="pair_rows: must be int32"):
        gemmops.gather_reduce(rows, pair.long(), out)
    with pytest.raises(ValueError, match="scores: must have pair_rows' shape"):
        gemmops.gather_reduce(rows, pair, out, scores[:, :2].contiguous())
    with pytest.raises(ValueError, match="out: H"):
        gemmops.gather_reduce(rows, pair, out[:, :8])


@pytest.mark.gpu
@pytest.mark.parametrize("H", [2048, 100])
def test_the_gpu_gives_the_hosts_bits(H):
    rows, pair, scores = problem(S=3000, T=1000, k=8, H=H)
    limit = torch.tensor([2500], dtype=torch.int32)
    host = _combine.combine(rows, pair, scores, limit)
    dev = _combine.combine(rows.cuda(), pair.cuda(), scores.cuda(), limit.cuda())
    assert torch.equal(dev.cpu(), host)
