# tests/python/test_scaled_grouped_mm.py: gemmops.torch.scaled_grouped_mm (torch._scaled_grouped_mm's 2d x
# 3d form, rowwise scales) against a float64 reference, on the host and on the GPU, and its refusals
# SPDX-License-Identifier: Apache-2.0
import pytest

torch = pytest.importorskip("torch")

import gemmops.torch as gt  # noqa: E402


def problem(ends, k, n, device="cpu", seed=0):
    g = torch.Generator().manual_seed(seed)
    total = ends[-1] + 5  # rows past the last group
    a = (torch.randn(total, k, generator=g) * 2).to(torch.float8_e4m3fn)
    # B as torch passes it: the transposed view of a contiguous (G, N, K)
    b = (torch.randn(len(ends), n, k, generator=g) * 2).to(torch.float8_e4m3fn).transpose(-2, -1)
    sa, sb = torch.rand(total, generator=g) + 0.25, torch.rand(len(ends) * n, generator=g) + 0.25
    offs = torch.tensor(ends, dtype=torch.int32)
    return [t.to(device) for t in (a, b, sa, sb, offs)]


def reference(a, b, sa, sb, offs):
    out = torch.zeros(a.shape[0], b.shape[-1], dtype=torch.float64)
    start = 0
    for g, end in enumerate(offs.tolist()):
        rows = a[start:end].double().cpu() * sa[start:end, None].double().cpu()
        out[start:end] = rows @ (b[g].double().cpu() * sb.view(b.shape[0], -1)[g][None, :].double().cpu())
        start = end
    return out


@pytest.mark.parametrize("ends,k,n", [([3, 3, 17, 40], 64, 48), ([0, 129], 320, 256)])
def test_matches_the_reference_on_the_host_rows_past_the_groups_zero(ends, k, n):
    a, b, sa, sb, offs = problem(ends, k, n)
    got = gt.scaled_grouped_mm(a, b, sa, sb, offs, out_dtype=torch.bfloat16)
    assert got.dtype == torch.bfloat16 and got.shape == (a.shape[0], n)
    want = reference(a, b, sa, sb, offs)
    torch.testing.assert_close(got.double(), want, rtol=1e-2, atol=1e-2 * want.abs().max().item())
    assert not got[ends[-1]:].any()


def test_refuses_what_it_does_not_serve_naming_it():
    a, b, sa, sb, offs = problem([4, 8], 32, 16)
    with pytest.raises(ValueError, match="2d x 3d form with offs"):
        gt.scaled_grouped_mm(a, b, sa, sb)
    with pytest.raises(ValueError, match="bias: not served"):
        gt.scaled_grouped_mm(a, b, sa, sb, offs, bias=torch.zeros(16))
    with pytest.raises(ValueError, match="mat_a, mat_b: must both be float8_e4m3fn"):
        gt.scaled_grouped_mm(a.float(), b, sa, sb, offs)
    with pytest.raises(ValueError, match="scale_a, scale_b: rowwise scales"):
        gt.scaled_grouped_mm(a, b, sa[:3], sb, offs)


@pytest.mark.gpu
def test_matches_the_reference_and_torch_on_the_gpu(monkeypatch):
    monkeypatch.delenv("GEMMOPS_TRIAL_DESIGNS", raising=False)  # offered without the opt-in
    a, b, sa, sb, offs = problem([0, 1, 130, 130, 387, 451], 320, 320, "cuda", seed=3)
    got = gt.scaled_grouped_mm(a, b, sa, sb, offs, out_dtype=torch.bfloat16)
    want = reference(a, b, sa, sb, offs)
    torch.testing.assert_close(got.cpu().double(), want, rtol=1e-2, atol=1e-2 * want.abs().max().item())
    assert not got[451:].any()
    try:
        theirs = torch._scaled_grouped_mm(a, b, sa, sb, offs=offs, out_dtype=torch.bfloat16)
    except (RuntimeError, NotImplementedError) as e:  # a torch without it on this card
        pytest.skip(f"torch._scaled_grouped_mm: {e}")
    torch.testing.assert_close(got[:451].float(), theirs[:451].float(), rtol=1e-2, atol=1e-2 * want.abs().max().item())
