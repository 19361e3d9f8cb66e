# tests/python/test_epilogue_outputs.py: gemmops.torch's training-step helpers against torch autograd:
# grouped_mm_dgated (the activation's backward fused into dA's store: dh, s * act(h), ds) and
# grouped_mm_with_pre_activation (the forward keeping h), on the CPU operators always and on the GPU
# (trial paths, asked for with GEMMOPS_TRIAL_DESIGNS=1) where one is
# SPDX-License-Identifier: Apache-2.0
import pytest

torch = pytest.importorskip("torch")

import gemmops  # noqa: E402
import gemmops.torch as gt  # noqa: E402

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


def act(h, activation, gate_layout, alpha=1.702, limit=7.0):
    """The activation in torch ops (autograd gives its backward, clamps as torch passes them)."""
    if activation == "silu":
        return torch.nn.functional.silu(h)
    if activation == "gelu_tanh":
        return torch.nn.functional.gelu(h, approximate="tanh")
    if activation == "relu_squared":
        return torch.relu(h) ** 2
    i = h.shape[-1] // 2
    g, u = (h[:, :i], h[:, i:]) if gate_layout == "concatenated" else (h[:, 0::2], h[:, 1::2])
    if activation == "swiglu":
        return torch.nn.functional.silu(g) * u
    g, u = g.clamp(max=limit), u.clamp(-limit, limit)
    return (u + 1) * g * torch.sigmoid(alpha * g)


def problem(device, S=70, H=96, I=136, E=4, seed=0):
    """dout rows (S, H), W2 transposed (E, H, I), ragged ends (an empty group; 6 rows past the last)."""
    gen = torch.Generator().manual_seed(seed)
    dout = torch.randn(S, H, generator=gen).bfloat16()
    w = (torch.randn(E, H, I, generator=gen) / H ** 0.5).bfloat16()
    ends = torch.tensor([20, 20, 41, S - 6], dtype=torch.int32)
    h = (torch.randn(S, 2 * I, generator=gen) * 1.5).bfloat16()
    s = torch.rand(S, generator=gen) + 0.25
    return [t.to(device) for t in (dout, w, ends, h, s)]


def product(a, b, ends):
    """dA in fp32 per group; rows past the last end zero."""
    out = torch.zeros(a.shape[0], b.shape[-1], dtype=torch.float32, device=a.device)
    start = 0
    for g, end in enumerate(ends.tolist()):
        out[start:end] = a[start:end].float() @ b[g].float()
        start = end
    return out


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("activation,gate_layout,limit", [("swiglu", "concatenated", 7.0),
                                                          ("swiglu", "interleaved", 7.0),
                                                          ("swiglu_oss", "concatenated", 1.0),
                                                          ("swiglu_oss", "interleaved", 1.0),
                                                          ("silu", "concatenated", 7.0),
                                                          ("gelu_tanh", "concatenated", 7.0),
                                                          ("relu_squared", "concatenated", 7.0)])
def test_grouped_mm_dgated_matches_torch_autograd(device, activation, gate_layout, limit, monkeypatch):
    monkeypatch.setenv("GEMMOPS_TRIAL_DESIGNS", "1")
    dout, w, ends, h, s = problem(device)
    if activation not in ("swiglu", "swiglu_oss"):
        h = h[:, : w.shape[-1]].contiguous()  # a plain activation's h has I columns
    # No value exactly at a clamp's bound: torch's clamp passes the gradient there up to 2.11 and
    # not in later versions; the kernel follows 2.11 (docs/kernels.md). Off the bound both agree.
    h = torch.where(h.float().abs() == limit, h.float() * 1.0625, h.float()).to(h.dtype)
    got = gt.grouped_mm_dgated(dout, w, ends, h, s, activation, gate_layout, limit=limit)
    assert got is not None  # an operator serves it on this device (trial on the GPU)
    dh, scaled, ds = got
    n = int(ends[-1])
    da = product(dout, w, ends)[:n]
    hh = h[:n].float().requires_grad_()
    ss = s[:n].clone().requires_grad_()
    y = ss[:, None] * act(hh, activation, gate_layout, limit=limit)
    dh_ref, ds_ref = torch.autograd.grad(y, (hh, ss), grad_outputs=da)
    torch.testing.assert_close(dh[:n].float(), dh_ref, rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(scaled[:n].float(), y.detach(), rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(ds[:n], ds_ref, rtol=1e-3, atol=1e-3)
    # rows past offs[-1]: zeros in every output
    assert not dh[n:].any() and not scaled[n:].any() and not ds[n:].any()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("activation,gate_layout", [("swiglu", "concatenated"), ("swiglu_oss", "interleaved"),
                                                    ("silu", "concatenated")])
def test_grouped_mm_with_pre_activation_keeps_h(device, activation, gate_layout, monkeypatch):
    monkeypatch.setenv("GEMMOPS_TRIAL_DESIGNS", "1")
    x, w, ends, _, _ = problem(device, S=50, H=64, I=144)  # (an N-major B's up half starts at a multiple of 8)
    got = gt.grouped_mm_with_pre_activation(x, w, ends, activation, gate_layout)
    assert got is not None
    out, h = got
    n = int(ends[-1])
    v = product(x, w, ends)
    torch.testing.assert_close(h[:n].float(), v[:n], rtol=1e-2, atol=1e-2)
    want = torch.nn.functional.silu(v[:n]) if activation == "silu" else act(v[:n], activation, gate_layout)
    torch.testing.assert_close(out[:n].float(), want, rtol=2e-2, atol=2e-2)
    assert not h[n:].any() and not out[n:].any()


def test_score_grad_chunks_is_ceil_of_i_over_64():
    assert gemmops.score_grad_chunks(136) == 3 and gemmops.score_grad_chunks(128) == 2
    assert gemmops.score_grad_chunk == 64


def test_the_three_backward_tensors_come_together():
    h = torch.zeros(4, 16, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="epilogue.activation_grad: needs grad_pre_activation"):
        gemmops.EpilogueOps(activation="swiglu", grad_pre_activation=h)


@pytest.mark.parametrize("device", DEVICES)
def test_a_step_piece_s_later_calls_run_by_addresses_with_the_first_call_s_bits(device, monkeypatch):
    # After a layout's first call (which checks its arguments and makes the plan) each step piece runs
    # its plan by data addresses alone: no arguments object is built, and the results are the bits a
    # first call on the same data gives.
    from gemmops.torch import _fused
    monkeypatch.setenv("GEMMOPS_TRIAL_DESIGNS", "1")
    dout, w, ends, h, s = problem(device)                      # S = 70, H = 96, I = 136, E = 4
    gen = torch.Generator().manual_seed(3)
    T, (E, H, I), S = 30, w.shape, h.shape[0]
    rows = torch.randint(0, T, (S,), generator=gen, dtype=torch.int32).to(device)
    x = torch.randn(T, H, generator=gen).bfloat16().to(device)
    w_up = (torch.randn(E, H, 2 * I, generator=gen) / H ** 0.5).bfloat16().to(device)
    bias = torch.randn(E, H, generator=gen).bfloat16().to(device)
    act_rows = torch.randn(S, I, generator=gen).bfloat16().to(device)
    pieces = {
        "up": lambda: _fused.grouped_mm_with_pre_activation(x, w_up, ends, "swiglu", a_row_index=rows),
        "down dgrad": lambda: _fused.grouped_mm_dgated(dout[:T], w, ends, h, s, a_row_index=rows),
        "down with a bias": lambda: (_fused.step_grouped_mm(act_rows, w.transpose(-2, -1).contiguous(), ends, bias),),
        "dW1": lambda: (_fused.grouped_mm_k_gathered(x.t(), h, ends, a_k_index=rows, out_m_major=True),),
    }
    first = {}
    for name, piece in pieces.items():
        got = piece()
        assert got is not None and all(t is not None for t in got), f"{name}: no operator serves it"
        first[name] = [t.clone() for t in got]

    def no_arguments(*args, **kwargs):
        raise AssertionError("a later call built an arguments object")
    monkeypatch.setattr(_fused._core, "GroupedGemmArguments", no_arguments)
    for name, piece in pieces.items():
        for got, want in zip(piece(), first[name]):
            assert torch.equal(got, want), name


def test_a_plan_with_second_operands_refuses_to_run_by_addresses_without_them():
    x, w, ends, _, _ = problem("cpu", S=50, H=64, I=144)  # w (4, 64, 144): SwiGLU's out has 72 columns

    def arguments():
        out, pre = torch.empty(50, 72, dtype=torch.bfloat16), torch.empty(50, 144, dtype=torch.bfloat16)
        return gemmops.GroupedGemmArguments(x, w, out, accumulator_type="float32", offsets=ends, zero_tail=True,
                                            epilogue=gemmops.EpilogueOps("swiglu", pre_activation=pre)), out, pre

    args, out, pre = arguments()
    plan = gemmops.make_plan(args)
    with pytest.raises(ValueError, match="^pre_activation: the plan's epilogue writes it; its address must not be 0"):
        plan._run_unchecked(x.data_ptr(), w.data_ptr(), out.data_ptr(), offsets=ends.data_ptr())
    plan._run_unchecked(x.data_ptr(), w.data_ptr(), out.data_ptr(), offsets=ends.data_ptr(), pre_activation=pre.data_ptr())
    ref_args, ref_out, ref_pre = arguments()
    plan.run(ref_args)
    assert torch.equal(out, ref_out) and torch.equal(pre, ref_pre)
