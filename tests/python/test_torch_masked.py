# tests/python/test_torch_masked.py: gemmops.torch.grouped_mm_masked (expert-parallel decode's masked layout)
# against torch on the CPU operators: counted rows computed, the rest zero, bad counts refused
# SPDX-License-Identifier: Apache-2.0
import pytest

torch = pytest.importorskip("torch")

import gemmops.torch as gt  # noqa: E402


def test_counted_rows_are_the_product_and_the_rest_are_zero():
    g = torch.Generator().manual_seed(0)
    G, max_m, K, N = 5, 8, 16, 12
    a = torch.randn(G, max_m, K, generator=g)
    b = torch.randn(G, N, K, generator=g).transpose(-2, -1)  # (G, K, N), K-major, as weights are stored
    counts = torch.tensor([8, 0, 1, 3, 7], dtype=torch.int32)
    out = gt.grouped_mm_masked(a, b, counts)
    assert out.shape == (G, max_m, N)
    for e in range(G):
        c = int(counts[e])
        torch.testing.assert_close(out[e, :c], a[e, :c] @ b[e], rtol=1e-5, atol=1e-5)
        assert (out[e, c:] == 0).all()
    again = gt.grouped_mm_masked(a, b, torch.tensor([1, 2, 3, 4, 5], dtype=torch.int32))  # the same plan
    torch.testing.assert_close(again[4, :5], a[4, :5] @ b[4], rtol=1e-5, atol=1e-5)
    assert (again[0, 1:] == 0).all()


def test_counts_past_max_m_and_bad_ranks_are_refused():
    a, b = torch.zeros(2, 4, 3), torch.zeros(2, 3, 5)
    with pytest.raises(gt.GroupedMMError, match=r"row counts must be in \[0, MaxM\]"):
        gt.grouped_mm_masked(a, b, torch.tensor([5, 0], dtype=torch.int32))
    with pytest.raises(gt.GroupedMMError, match="must be \\(G, MaxM, K\\)"):
        gt.grouped_mm_masked(a[0], b, torch.tensor([1, 0], dtype=torch.int32))
