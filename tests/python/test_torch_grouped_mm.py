# tests/python/test_torch_grouped_mm.py: gemmops.torch.grouped_mm as a drop-in for
# torch.nn.functional.grouped_mm: PyTorch's own case matrix (forms x strided x row/column-major x
# dtypes x a zero-size group x backward), element by element against float64 and, on the GPU,
# against gemmops' CPU operators; plus the layout of gradients, rows past offs[-1], errors, patch()
# SPDX-License-Identifier: Apache-2.0
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
gt = pytest.importorskip("gemmops.torch", reason="gemmops.torch needs torch")
F = torch.nn.functional

pytestmark = pytest.mark.torch

DTYPES = [torch.bfloat16, torch.float32, torch.float16]
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
TOL = {torch.bfloat16: dict(rtol=2e-2, atol=2e-2), torch.float16: dict(rtol=2e-3, atol=2e-3),
       torch.float32: dict(rtol=1e-4, atol=1e-4)}
M, N, K, G = 16, 32, 64, 4


def rand(*shape, dtype, device, seed=[0]):
    seed[0] += 1
    g = torch.Generator().manual_seed(seed[0])
    return torch.randn(*shape, generator=g).to(dtype).to(device)


def operands(form, strided, a_row_major, b_row_major, dtype, device):
    """The operands of PyTorch's test_grouped_gemm_<form>: padded views when strided, column-major
    views when not row-major; b is passed transposed, as torch's tests do."""
    s = int(strided)
    if form == "2d2d":
        a = (rand(M, K * G + K * s, dtype=dtype, device=device)[:, :K * G] if a_row_major
             else rand(K * G + K * s, M, dtype=dtype, device=device).t()[:, :K * G])
        b = (rand(N, K * G + K * s, dtype=dtype, device=device)[:, :K * G] if b_row_major
             else rand(K * G + K * s, N, dtype=dtype, device=device).t()[:, :K * G])
    elif form == "2d3d":
        a = (rand(M * G, K * (1 + s), dtype=dtype, device=device)[:, :K] if a_row_major
             else rand(K, (M + 2 * s) * G, dtype=dtype, device=device).t()[:M * G, :])
        b = (rand(G * (1 + s), N, K * (1 + s), dtype=dtype, device=device)[::1 + s, :, :K] if b_row_major
             else rand(G * (1 + s), K * (1 + s), N, dtype=dtype, device=device).transpose(-2, -1)[::1 + s, :, :K])
    elif form == "3d3d":
        a = (rand(G * (1 + s), M, K * (1 + s), dtype=dtype, device=device)[::1 + s, :, :K] if a_row_major
             else rand(G * (1 + s), K * (1 + s), M, dtype=dtype, device=device).transpose(-2, -1)[::1 + s, :, :K])
        b = (rand(G * (1 + s), N, K * (1 + s), dtype=dtype, device=device)[::1 + s, :, :K] if b_row_major
             else rand(G * (1 + s), K * (1 + s), N, dtype=dtype, device=device).transpose(-2, -1)[::1 + s, :, :K])
    else:  # 3d2d
        a = (rand(G * (1 + s), M, K * (1 + s), dtype=dtype, device=device)[::1 + s, :, :K] if a_row_major
             else rand(G * (1 + s), K * (1 + s), M, dtype=dtype, device=device).transpose(-2, -1)[::1 + s, :, :K])
        b = (rand(N * G, K * (1 + s), dtype=dtype, device=device)[:, :K] if b_row_major
             else rand(K, N * (G + s), dtype=dtype, device=device).t()[:N * G, :])
    return a.requires_grad_(True), b.requires_grad_(True)


def offsets(form, zero_size, device):
    step = {"2d2d": K, "2d3d": M, "3d2d": N}.get(form)
    if step is None:
        return None
    offs = torch.arange(step, G * step + 1, step, dtype=torch.int32)
    if zero_size:
        offs[0] = offs[1]  # the first group is empty
    return offs.to(device)


def reference(form, a, b, offs):
    """float64 product of (a, b^T) per group, torch's semantics, zeros past offs[-1]."""
    a, b = a.double(), b.double()
    if form == "3d3d":
        return a @ b.transpose(-2, -1)
    ends = offs.tolist()
    starts = [0] + ends[:-1]
    if form == "2d2d":
        return torch.stack([a[:, s:e] @ b[:, s:e].t() for s, e in zip(starts, ends)])
    if form == "2d3d":
        out = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float64, device=a.device)
        for g, (s, e) in enumerate(zip(starts, ends)):
            out[s:e] = a[s:e] @ b[g].t()
        return out
    out = torch.zeros(a.shape[1], b.shape[0], dtype=torch.float64, device=a.device)
    for g, (s, e) in enumerate(zip(starts, ends)):
        out[:, s:e] = a[g] @ b[s:e].t()
    return out


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("b_row_major", [False, True])
@pytest.mark.parametrize("a_row_major", [False, True])
@pytest.mark.parametrize("strided", [False, True])
@pytest.mark.parametrize("form", ["2d2d", "2d3d", "3d3d", "3d2d"])
def test_case_matrix_forward_and_backward(form, strided, a_row_major, b_row_major, dtype, device):
    a, b = operands(form, strided, a_row_major, b_row_major, dtype, device)
    for zero_size in ((False, True) if form in ("2d3d", "3d2d") else (False,)):
        offs = offsets(form, zero_size, device)
        a.grad = b.grad = None
        out = gt.grouped_mm(a, b.transpose(-2, -1), offs=offs, out_dtype=dtype)
        ra = a.detach().double().requires_grad_(True)
        rb = b.detach().double().requires_grad_(True)
        ref = reference(form, ra, rb, offs)
        assert out.shape == ref.shape and out.dtype == dtype
        torch.testing.assert_close(out.double(), ref, **TOL[dtype])
        grad = rand(*out.shape, dtype=dtype, device=device)
        out.backward(grad)
        ref.backward(grad.double())
        torch.testing.assert_close(a.grad.double(), ra.grad, **TOL[dtype])
        torch.testing.assert_close(b.grad.double(), rb.grad, **TOL[dtype])
        if device == "cuda":  # every element against gemmops' CPU operators on the same operands
            on_cpu = gt.grouped_mm(a.detach().cpu(), b.detach().cpu().transpose(-2, -1),
                                   offs=None if offs is None else offs.cpu(), out_dtype=dtype)
            torch.testing.assert_close(out.cpu(), on_cpu, **TOL[dtype])


@pytest.mark.parametrize("device", DEVICES)
def test_rows_past_the_last_group_are_zeros_and_get_zero_gradients(device):
    a = rand(40, K, dtype=torch.bfloat16, device=device).requires_grad_(True)
    w = rand(3, N, K, dtype=torch.bfloat16, device=device).requires_grad_(True)
    offs = torch.tensor([8, 8, 29], dtype=torch.int32, device=device)  # 11 rows past the end
    out = gt.grouped_mm(a, w.transpose(-2, -1), offs=offs)
    assert torch.all(out[29:] == 0)
    out.backward(torch.ones_like(out))
    assert torch.all(a.grad[29:] == 0)
    assert torch.all(w.grad[1] == 0), "an empty group gets a zero weight gradient"


@pytest.mark.parametrize("device", DEVICES)
def test_weight_gradients_come_back_in_the_weights_own_layout(device):
    # MoE models store (E, N, K) weights and pass w.transpose(-2, -1): the gradient must arrive in
    # (E, N, K) order so that autograd accumulates it without a copy.
    x = rand(64, K, dtype=torch.bfloat16, device=device).requires_grad_(True)
    w = rand(4, N, K, dtype=torch.bfloat16, device=device).requires_grad_(True)
    offs = torch.tensor([16, 16, 40, 64], dtype=torch.int32, device=device)
    out = gt.grouped_mm(x, w.transpose(-2, -1), offs=offs)
    dw, dx = torch.autograd.grad(out, (w, x), torch.ones_like(out))
    assert dw.stride() == w.stride() and dx.stride() == x.stride()
    # and a column-major activation (a transposed view) gets a column-major gradient in 3d3d
    a = rand(4, K, M, dtype=torch.bfloat16, device=device).transpose(-2, -1).requires_grad_(True)
    (da,) = torch.autograd.grad(gt.grouped_mm(a, w.transpose(-2, -1)).sum(), (a,))
    assert da.stride(-2) == 1


@pytest.mark.parametrize("device", DEVICES)
def test_output_layout_matches_torch(device):
    # Rows padded to 16 bytes, as torch returns them: N = 7 in bf16 has row stride 8.
    a = rand(10, 16, dtype=torch.bfloat16, device=device)
    b = rand(2, 16, 7, dtype=torch.bfloat16, device=device)
    out = gt.grouped_mm(a, b, offs=torch.tensor([4, 10], dtype=torch.int32, device=device))
    assert out.shape == (10, 7) and out.stride() == (8, 1)
    out3 = gt.grouped_mm(rand(2, 3, 16, dtype=torch.bfloat16, device=device), b)
    assert out3.shape == (2, 3, 7) and out3.stride() == (24, 8, 1)


@pytest.mark.parametrize("device", DEVICES)
def test_empty_problems(device):
    bf = dict(dtype=torch.bfloat16, device=device)
    i32 = dict(dtype=torch.int32, device=device)
    # no rows (an expert-parallel rank without tokens), K = 0, no groups
    assert gt.grouped_mm(rand(0, K, **bf), rand(2, K, N, **bf), offs=torch.zeros(2, **i32)).shape == (0, N)
    assert torch.all(gt.grouped_mm(rand(8, 0, **bf), rand(2, 0, N, **bf), offs=torch.tensor([3, 8], **i32)) == 0)
    assert torch.all(gt.grouped_mm(rand(8, K, **bf), rand(0, K, N, **bf), offs=torch.zeros(0, **i32)) == 0)
    assert gt.grouped_mm(rand(M, 0, **bf), rand(0, N, **bf), offs=torch.zeros(0, **i32)).shape == (0, M, N)


@pytest.mark.parametrize("bad, match", [
    (lambda a, b, o: gt.grouped_mm(a, b, offs=o.long()), "offs: must be int32; got int64"),
    (lambda a, b, o: gt.grouped_mm(a, b), "offs: required"),
    (lambda a, b, o: gt.grouped_mm(a, b, offs=o, bias=torch.zeros(1)), "bias: not supported"),
    (lambda a, b, o: gt.grouped_mm(a.float(), b, offs=o), "mat_b: dtype must equal mat_a's"),
    (lambda a, b, o: gt.grouped_mm(a[None, None], b, offs=o), "mat_a: must be 2d or 3d; got 4d"),
    (lambda a, b, o: gt.grouped_mm(a[:, :8], b, offs=o), "mat_b: K"),
    (lambda a, b, o: gt.grouped_mm(a, b, offs=o[:1]), "offs: length must equal mat_b's group count"),
    (lambda a, b, o: gt.grouped_mm(a.int(), b, offs=o), "mat_a: dtype must be"),
    (lambda a, b, o: gt.grouped_mm(a, b, offs=o, out_dtype=torch.int32), "out_dtype: must be"),
])
def test_bad_inputs_name_the_operand_and_the_rule(bad, match):
    a, b = rand(8, K, dtype=torch.bfloat16, device="cpu"), rand(2, K, N, dtype=torch.bfloat16, device="cpu")
    offs = torch.tensor([3, 8], dtype=torch.int32)
    with pytest.raises(RuntimeError, match=match) as info:
        bad(a, b, offs)
    assert isinstance(info.value, ValueError), "gemmops' own rule: a ValueError too"


def test_patch_routes_torch_grouped_mm_and_undoes_itself():
    a, b = rand(8, K, dtype=torch.float32, device="cpu"), rand(2, K, N, dtype=torch.float32, device="cpu")
    offs = torch.tensor([3, 6], dtype=torch.int32)
    original = (F.grouped_mm, torch._grouped_mm)
    with gt.patch():
        assert F.grouped_mm is gt.grouped_mm and torch._grouped_mm is gt.grouped_mm
        out = F.grouped_mm(a, b, offs=offs)
    assert (F.grouped_mm, torch._grouped_mm) == original
    assert torch.all(out[6:] == 0)
    torch.testing.assert_close(out.double(), reference("2d3d", a, b.transpose(-2, -1), offs), **TOL[torch.float32])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("form", ["2d2d", "2d3d", "3d3d", "3d2d"])
def test_torch_compile_of_patched_f_grouped_mm_matches_eager(form, device):
    # PyTorch's test_grouped_gemm_compiled, with torch's own function routed here and the first
    # group empty.
    a, b = operands(form, False, True, False, torch.bfloat16, device)
    offs = offsets(form, True, device)
    a, b = a.detach(), b.detach()
    backend = "inductor" if device == "cuda" else "aot_eager"
    with gt.patch():
        compiled = torch.compile(F.grouped_mm, fullgraph=True, backend=backend)
        want = F.grouped_mm(a, b.transpose(-2, -1), offs=offs)
        got = compiled(a, b.transpose(-2, -1), offs=offs)
    torch.testing.assert_close(got, want)


def test_opcheck_of_the_custom_op_in_every_form():
    for form in ("2d2d", "2d3d", "3d3d"):
        a, b = operands(form, False, True, False, torch.float32, "cpu")
        torch.library.opcheck(torch.ops.gemmops.grouped_mm.default, (a, b.transpose(-2, -1), offsets(form, True, "cpu"), None))
