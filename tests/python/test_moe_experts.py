# tests/python/test_moe_experts.py: gemmops.torch.moe_experts (fused activation and routing weights,
# recomputing backward) against a float64 per-token reference, fused and unfused, on ragged routings
# SPDX-License-Identifier: Apache-2.0
import weakref

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import gemmops.torch as gt  # noqa: E402
from gemmops.torch import _fused, moe  # noqa: E402

H, I = 24, 16


def reference(x, ids, w, w_gate_up, w_down, activation, gate_layout, b_gate_up=None, b_down=None):
    """sum_j w[t, j] * (act(x[t] @ up_e + b1_e) @ down_e + b2_e), in float64, ids outside [0, E) skipped."""
    x, w, wu, wd = x.double(), w.double(), w_gate_up.double(), w_down.double()
    b1 = b_gate_up.double() if b_gate_up is not None else torch.zeros(wu.shape[0], wu.shape[-1], dtype=torch.float64)
    b2 = b_down.double() if b_down is not None else torch.zeros(wd.shape[0], wd.shape[-1], dtype=torch.float64)
    rows = []
    for t in range(x.shape[0]):
        acc = torch.zeros(x.shape[1], dtype=torch.float64)
        for j in range(ids.shape[1]):
            e = int(ids[t, j])
            if 0 <= e < wu.shape[0]:
                p = (x[t] @ wu[e] + b1[e]).unsqueeze(0)
                acc = acc + w[t, j] * (moe.apply_activation(p, activation, gate_layout)[0] @ wd[e] + b2[e])
        rows.append(acc)
    return torch.stack(rows)


def problem(T, E, k, activation, seed=0, down_layout="contiguous", gate_up_layout="transposed"):
    g = torch.Generator().manual_seed(seed)
    n_up = 2 * I if activation in ("swiglu", "swiglu_oss") else I
    x = torch.randn(T, H, generator=g)
    ids = torch.randint(0, max(E - 1, 1), (T, k), generator=g)  # the last expert gets nothing
    if T > 2:
        ids[: T // 2, 0] = 0  # expert 0 takes many
        ids[1, -1] = E + 3    # a sentinel: adds nothing
    w = torch.rand(T, k, generator=g)
    # w_gate_up as the transposed view of an (E, N, H) weight, as nn.Linear stores it.
    w_gate_up = (torch.randn(E, n_up, H, generator=g) / H ** 0.5).transpose(-2, -1)
    if gate_up_layout == "contiguous":
        w_gate_up = w_gate_up.contiguous()
    if down_layout == "transposed":  # the transposed view of an (E, H, I) nn.Linear-style weight
        w_down = (torch.randn(E, H, I, generator=g) / I ** 0.5).transpose(-2, -1)
    else:
        w_down = torch.randn(E, I, H, generator=g) / I ** 0.5
    return x, ids, w, w_gate_up, w_down


def leaves(*ts):
    return [t.detach().clone().requires_grad_(True) for t in ts]


def check(T, E, k, activation, gate_layout="concatenated", down_layout="contiguous", gate_up_layout="transposed"):
    x, ids, w, wu, wd = problem(T, E, k, activation, down_layout=down_layout, gate_up_layout=gate_up_layout)
    xe, we, ue, de = leaves(x, w, wu, wd)
    xr, wr, ur, dr = leaves(x, w, wu, wd)
    got = gt.moe_experts(xe, ids, we, ue, de, activation, gate_layout)
    want = reference(xr, ids, wr, ur, dr, activation, gate_layout)
    torch.testing.assert_close(got.double(), want, rtol=2e-4, atol=2e-4)
    grad = torch.randn(got.shape, generator=torch.Generator().manual_seed(5))
    (got * grad).sum().backward()
    (want * grad.double()).sum().backward()
    for a, b, what in ((xe, xr, "x"), (we, wr, "topk_weights"), (ue, ur, "w_gate_up"), (de, dr, "w_down")):
        torch.testing.assert_close(a.grad.double(), b.grad.double(), rtol=5e-4, atol=5e-4, msg=what)


@pytest.mark.parametrize("down_layout,gate_up_layout", [("contiguous", "transposed"), ("transposed", "transposed"),
                                                         ("transposed", "contiguous"), ("contiguous", "contiguous")])
def test_both_weight_layouts_match_and_each_weight_gradient_comes_in_its_weights_layout(down_layout, gate_up_layout):
    check(T=45, E=5, k=2, activation="swiglu", down_layout=down_layout, gate_up_layout=gate_up_layout)
    # The gradients as the op returns them (before autograd's accumulation, which would copy one of
    # another layout into the weight's, a strided transpose of the whole weight) have the weights'
    # strides: nothing to copy into .grad.
    x, ids, w, wu, wd = problem(45, 5, 2, "swiglu", down_layout=down_layout, gate_up_layout=gate_up_layout)
    xe, we, ue, de = leaves(x, w, wu, wd)
    out = gt.moe_experts(xe, ids, we, ue, de)
    d_up, d_down = torch.autograd.grad(out, [ue, de], torch.ones_like(out))
    assert d_down.stride() == de.stride(), (d_down.stride(), de.stride())
    assert d_up.stride() == ue.stride(), (d_up.stride(), ue.stride())


@pytest.mark.parametrize("activation,gate_layout", [("swiglu", "concatenated"), ("swiglu", "interleaved"),
                                                     ("swiglu_oss", "interleaved"), ("silu", "concatenated"),
                                                     ("gelu_tanh", "concatenated"), ("relu_squared", "concatenated")])
def test_forward_and_every_gradient_match_the_reference(activation, gate_layout):
    check(T=37, E=6, k=3, activation=activation, gate_layout=gate_layout)


@pytest.mark.parametrize("T,E,k", [(1, 4, 1), (2, 8, 8), (64, 1, 1), (20, 16, 2)])
def test_ragged_routings_one_token_one_expert_top_k_1_to_8(T, E, k):
    check(T, E, k, "swiglu")


def test_the_unfused_path_gives_the_same_result(monkeypatch):
    x, ids, w, wu, wd = problem(29, 5, 2, "swiglu")
    fused = gt.moe_experts(x, ids, w, wu, wd)
    monkeypatch.setattr(moe, "grouped_mm_epilogue", lambda *a, **kw: None)  # as where no operator fuses
    unfused = gt.moe_experts(x, ids, w, wu, wd)
    torch.testing.assert_close(fused, unfused, rtol=1e-5, atol=1e-5)


def test_the_forward_fuses_on_the_cpu_operators():
    x, ids, w, wu, wd = problem(9, 3, 2, "swiglu")
    order, offsets, token = moe.route(ids, 3)
    h = _fused.grouped_mm_epilogue(x[token], wu, offsets, "swiglu", "concatenated")
    assert h is not None and h.shape == (ids.numel(), I)
    p = gt.grouped_mm(x[token], wu, offsets)
    torch.testing.assert_close(h, F.silu(p[:, :I]) * p[:, I:], rtol=1e-5, atol=1e-5)


def test_routing_sorts_by_expert_and_puts_sentinels_past_the_last_group():
    ids = torch.tensor([[2, 0], [5, 1], [0, -1]])
    order, offsets, token = moe.route(ids, 3)
    assert offsets.tolist() == [2, 3, 4] and offsets.dtype == torch.int32
    assert token.tolist() == [0, 2, 1, 0, 1, 2]  # experts 0, 0, 1, 2, then the sentinels 5 and -1


def test_bad_inputs_are_refused_naming_the_rule():
    x, ids, w, wu, wd = problem(4, 3, 2, "swiglu")
    with pytest.raises(ValueError, match="activation"):
        gt.moe_experts(x, ids, w, wu, wd, activation="tanh")
    with pytest.raises(ValueError, match="w_gate_up, w_down"):
        gt.moe_experts(x, ids, w, wu, wd[:, :5])
    with pytest.raises(ValueError, match="x, topk_ids, topk_weights"):
        gt.moe_experts(x, ids[:, :1], w, wu, wd)


def step(x, ids, w, wu, wd, activation="swiglu"):
    """The output and the four gradients of one training step on fresh leaves."""
    xe, we, ue, de = leaves(x, w, wu, wd)
    out = gt.moe_experts(xe, ids, we, ue, de, activation)
    out.backward(torch.randn(out.shape, generator=torch.Generator().manual_seed(9)).to(out.dtype))
    return [out.detach(), xe.grad, we.grad, ue.grad, de.grad]


def test_the_unfused_training_step_gives_the_same_gradients(monkeypatch):
    x, ids, w, wu, wd = problem(29, 5, 2, "swiglu")
    fused = step(x, ids, w, wu, wd)
    for name in ("grouped_mm_with_pre_activation", "grouped_mm_dgated", "grouped_mm_k_gathered"):
        monkeypatch.setattr(moe, name, lambda *a, **kw: None)  # as where no operator fuses them
    for a, b in zip(fused, step(x, ids, w, wu, wd)):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


def test_a_step_is_bitwise_the_same_run_to_run():
    x, ids, w, wu, wd = problem(40, 6, 3, "swiglu")
    for a, b in zip(step(x, ids, w, wu, wd), step(x, ids, w, wu, wd)):
        assert torch.equal(a, b)


def test_sentinel_only_tokens_and_empty_experts_get_exact_zeros():
    x, ids, w, wu, wd = problem(10, 6, 2, "swiglu")
    ids[3] = 99  # token 3: every choice a sentinel
    ids[ids == 5] = 4  # expert 5: no token
    out, dx, dw, dwu, dwd = step(x, ids, w, wu, wd)
    assert not out[3].any() and not dx[3].any() and not dw[3].any()
    assert not dwu[5].any() and not dwd[5].any()


@pytest.mark.parametrize("grad", [True, False])
def test_torch_compile_keeps_the_layer_in_one_graph(grad):
    x, ids, w, wu, wd = problem(12, 4, 2, "swiglu")
    eager = step(x, ids, w, wu, wd) if grad else [gt.moe_experts(x, ids, w, wu, wd)]
    compiled = torch.compile(gt.moe_experts, fullgraph=True)
    if grad:
        xe, we, ue, de = leaves(x, w, wu, wd)
        out = compiled(xe, ids, we, ue, de)
        out.backward(torch.randn(out.shape, generator=torch.Generator().manual_seed(9)).to(out.dtype))
        got = [out.detach(), xe.grad, we.grad, ue.grad, de.grad]
    else:
        with torch.no_grad():
            got = [compiled(x, ids, w, wu, wd)]
    for a, b in zip(eager, got):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_the_custom_ops_pass_opcheck():
    from gemmops.torch import _moe_op
    x, ids, w, wu, wd = problem(6, 3, 2, "swiglu")
    x, w, wu, wd = leaves(x, w, wu, wd)
    torch.library.opcheck(_moe_op._forward, (x, ids, w, wu, wd, "swiglu", "concatenated", True, None, None))
    # Without keep nothing is saved for a backward (the wrapper asks for it only without gradients).
    torch.library.opcheck(_moe_op._forward, (x, ids, w, wu, wd, "swiglu", "concatenated", False, None, None),
                          test_utils=("test_schema", "test_faketensor"))
    # The backward's two ops (no autograd of their own), on what the forward saved.
    x, w, wu, wd = (t.detach() for t in (x, w, wu, wd))
    _, offsets, rows, pair, h, scores = _moe_op._forward(x, ids, w, wu, wd, "swiglu", "concatenated", True, None,
                                                         None)
    dout = torch.randn(x.shape)
    data_args = (dout, x, wd, offsets, rows, h, scores, "swiglu", "concatenated")
    torch.library.opcheck(_moe_op._backward_data, data_args)
    dh, a_scaled, ds = _moe_op._backward_data(*data_args)
    for b1, b2 in ((None, None), (torch.randn(wu.shape[0], wu.shape[-1]), torch.randn(wd.shape[0], wd.shape[-1]))):
        torch.library.opcheck(_moe_op._backward_rest, (dout, dh, a_scaled, ds, x, wu, wd, offsets, rows, pair, scores,
                                                       w.dtype, moe.transposed_view(wu), moe.transposed_view(wd), b1, b2))


def expect_gpu_step_matches_float64(T, activation, gate_layout, seed, biases=False):
    """moe_experts in bf16 on the GPU against the float64 reference: the output and every gradient
    (x, the scores, both weights and, with `biases`, both biases, drawn with seed + 1)."""
    x, ids, w, wu, wd = problem(T, 6, 3, activation, seed=seed)
    host, names = [x, w, wu, wd], ["x", "topk_weights", "w_gate_up", "w_down"]
    if biases:
        g = torch.Generator().manual_seed(seed + 1)
        host += [torch.randn(wu.shape[0], wu.shape[-1], generator=g), torch.randn(wd.shape[0], wd.shape[-1], generator=g)]
        names += ["b_gate_up", "b_down"]
    got_leaves = leaves(*(t.cuda() if t is w else t.bfloat16().cuda() for t in host))  # the scores stay fp32
    xe, we, ue, de = got_leaves[:4]
    kw = dict(b_gate_up=got_leaves[4], b_down=got_leaves[5]) if biases else {}
    got = gt.moe_experts(xe, ids.cuda(), we, ue, de, activation, gate_layout, **kw)
    want_leaves = leaves(*(t.detach().cpu().double() for t in got_leaves))
    want = reference(*want_leaves[:1], ids, *want_leaves[1:4], activation, gate_layout, *want_leaves[4:])
    torch.testing.assert_close(got.cpu().double(), want, rtol=3e-2, atol=3e-2)
    grad = torch.randn(got.shape, generator=torch.Generator().manual_seed(5))
    (got * grad.cuda().bfloat16()).sum().backward()
    (want * grad.bfloat16().double()).sum().backward()
    for a, b, what in zip(got_leaves, want_leaves, names):
        scale = b.grad.abs().max().item() + 1e-6
        torch.testing.assert_close(a.grad.cpu().double() / scale, b.grad / scale, rtol=3e-2, atol=3e-2, msg=what)


@pytest.mark.gpu
@pytest.mark.parametrize("activation,gate_layout,fused", [("swiglu", "concatenated", True),
                                                          ("swiglu", "interleaved", True),
                                                          ("swiglu_oss", "interleaved", True),
                                                          ("gelu_tanh", "concatenated", True),
                                                          ("swiglu", "concatenated", False)])
def test_the_step_on_the_gpu_matches_the_float64_reference(activation, gate_layout, fused, monkeypatch):
    # bf16 on the sm90 kernels: the fused pieces (gathered rows and K, the epilogues' second operands),
    # or, without `fused`, every piece's fallback (gathered copies, torch's activation backward).
    if not fused:
        monkeypatch.setattr(_fused, "_run_planned", lambda key, args, device: False)
    T = {False: 300, True: 301}[fused] + len(activation)
    expect_gpu_step_matches_float64(T, activation, gate_layout, seed=3)


@pytest.mark.gpu
@pytest.mark.parametrize("fused", [True, False])
def test_gpt_oss_biases_on_the_gpu_match_the_float64_reference(fused, monkeypatch):
    # bf16 on the sm90 kernels: the up bias in the up projection's epilogue with the clamped SwiGLU on
    # interleaved pairs, the down bias in the down projection's; or every piece's fallback.
    if not fused:
        monkeypatch.setattr(_fused, "_run_planned", lambda key, args, device: False)
    expect_gpu_step_matches_float64(257, "swiglu_oss", "interleaved", seed=11, biases=True)


def float32_layer(x, ids, w, wu, wd):
    """The layer in float32 torch ops (a loop over the experts), differentiable: the reference at sizes
    the per-token float64 loop cannot reach. SwiGLU, concatenated gate; ids outside [0, E) add nothing."""
    E, I = wu.shape[0], wd.shape[1]
    x, w, wu, wd = x.float(), w.float(), wu.float(), wd.float()
    out = torch.zeros_like(x)
    for e in range(E):
        token, choice = torch.nonzero(ids == e, as_tuple=True)
        if token.numel() == 0:
            continue
        h = x[token] @ wu[e]
        y = (F.silu(h[:, :I]) * h[:, I:]) @ wd[e]
        out = out.index_add(0, token, y * w[token, choice].unsqueeze(-1))
    return out


@pytest.mark.gpu
def test_a_long_routing_on_the_gpu_matches_float32_forward_and_every_gradient():
    # T = 65536 tokens, top-8 of 64 experts, one expert empty and sentinels (expert-parallel ids).
    T, E, k, H_, I_ = 65536, 64, 8, 256, 128
    g = torch.Generator().manual_seed(21)
    ids = torch.stack([torch.randperm(E - 1, generator=g)[:k] for _ in range(64)]).repeat(T // 64, 1)
    ids[::97, -1] = E + 5
    x = torch.randn(T, H_, generator=g).bfloat16()
    w = torch.rand(T, k, generator=g)
    wu = (torch.randn(E, H_, 2 * I_, generator=g) / H_ ** 0.5).bfloat16()
    wd = (torch.randn(E, I_, H_, generator=g) / I_ ** 0.5).bfloat16()
    got_leaves = [t.cuda().requires_grad_(True) for t in (x, w, wu, wd)]
    want_leaves = [t.cuda().float().requires_grad_(True) for t in (x, w, wu, wd)]
    ids = ids.cuda()
    got = gt.moe_experts(got_leaves[0], ids, *got_leaves[1:])
    want = float32_layer(want_leaves[0], ids, *want_leaves[1:])
    grad = torch.randn(T, H_, generator=g).cuda()
    torch.autograd.backward(got, grad.bfloat16())
    torch.autograd.backward(want, grad)

    def rel(a, b):
        return ((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-30)).item()

    assert rel(got, want) < 1e-2
    for a, b, what in zip(got_leaves, want_leaves, ("x", "topk_weights", "w_gate_up", "w_down")):
        assert rel(a.grad, b.grad) < 2e-2, what


@pytest.mark.gpu
@pytest.mark.parametrize("routing_kernels", ["0", "1"])
def test_the_layer_captures_into_a_cuda_graph_and_replays_new_routings(routing_kernels, monkeypatch):
    # No host synchronisation anywhere in the layer: a CUDA graph of it replays new tokens, routings
    # and scores written into the captured buffers, bit for bit what an eager call gives (torch's
    # sort, GEMMOPS_ROUTING=torch, or gemmops.route's kernels, the default).
    monkeypatch.setenv("GEMMOPS_ROUTING", "kernels" if routing_kernels == "1" else "torch")
    T, E, k = 300, 6, 3

    def inputs(seed):
        x, ids, w, wu, wd = problem(T, E, k, "swiglu", seed=seed)
        return [t.cuda() for t in (x.bfloat16(), ids, w, wu.bfloat16(), wd.bfloat16())]

    x, ids, w, wu, wd = inputs(1)
    with torch.no_grad():
        gt.moe_experts(x, ids, w, wu, wd)  # plans and kernels made outside the capture
        torch.cuda.synchronize()
        graph, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream()
        with torch.cuda.stream(stream):
            with torch.cuda.graph(graph, stream=stream):
                out = gt.moe_experts(x, ids, w, wu, wd)
        nx, nids, nw, _, _ = inputs(2)
        for buf, new in ((x, nx), (ids, nids), (w, nw)):
            buf.copy_(new)
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, gt.moe_experts(x, ids, w, wu, wd))


def test_the_backward_frees_the_pre_activation_before_the_weight_gradients(monkeypatch):
    # h is read by the backward's first GEMM only: it must be gone before the weight gradients are
    # made, or it shares their peak (Mixtral-8x7B: 448 MiB).
    kept, alive = [], []
    forward_step, weight_gradient = moe.forward_step, moe._weight_gradient

    def spy_forward(*args, **kwargs):
        out, saved = forward_step(*args, **kwargs)
        kept.append(weakref.ref(saved[3]))
        return out, saved

    def spy_weight_gradient(*args, **kwargs):
        alive.append(kept[-1]() is not None)
        return weight_gradient(*args, **kwargs)

    monkeypatch.setattr(moe, "forward_step", spy_forward)
    monkeypatch.setattr(moe, "_weight_gradient", spy_weight_gradient)
    x, ids, w, wu, wd = problem(12, 4, 2, "swiglu")
    x, w, wu, wd = leaves(x, w, wu, wd)
    gt.moe_experts(x, ids, w, wu, wd).sum().backward()
    assert kept and alive == [False, False]
    assert all(t.grad is not None for t in (x, w, wu, wd))


def test_activation_checkpointing_drops_the_pre_activation_and_gives_the_same_gradients(monkeypatch):
    # Under saved-tensor hooks (non-reentrant checkpointing, offloading) h is a saved tensor like the
    # others: checkpointing drops it after the forward and recomputes the layer for backward.
    from torch.utils.checkpoint import checkpoint
    kept = []
    forward_step = moe.forward_step

    def spy_forward(*args, **kwargs):
        out, saved = forward_step(*args, **kwargs)
        kept.append(weakref.ref(saved[3]))
        return out, saved

    monkeypatch.setattr(moe, "forward_step", spy_forward)
    x, ids, w, wu, wd = problem(12, 4, 2, "swiglu")
    plain, ckpt = leaves(x, w, wu, wd), leaves(x, w, wu, wd)
    gt.moe_experts(plain[0], ids, *plain[1:]).sum().backward()
    out = checkpoint(gt.moe_experts, ckpt[0], ids, *ckpt[1:], use_reentrant=False)
    assert kept[-1]() is None  # the forward's h is not kept
    out.sum().backward()
    for a, b in zip(ckpt, plain):
        assert torch.equal(a.grad, b.grad)


@pytest.mark.parametrize("activation,gate_layout,which", [("swiglu_oss", "interleaved", "both"),
                                                          ("swiglu", "concatenated", "both"),
                                                          ("swiglu_oss", "interleaved", "up"),
                                                          ("silu", "concatenated", "down")])
def test_expert_biases_match_the_reference_forward_and_every_gradient(activation, gate_layout, which):
    # gpt-oss's experts: a bias on each expert's up and down projections; the down bias is scaled by
    # the routing score with the rest of the expert's output, so it has a share of the scores' gradient.
    x, ids, w, wu, wd = problem(23, 5, 3, activation, seed=7)
    g = torch.Generator().manual_seed(8)
    b1 = torch.randn(wu.shape[0], wu.shape[-1], generator=g) if which in ("both", "up") else None
    b2 = torch.randn(wd.shape[0], wd.shape[-1], generator=g) if which in ("both", "down") else None
    biases = [b for b in (b1, b2) if b is not None]
    got_leaves, want_leaves = leaves(x, w, wu, wd, *biases), leaves(x, w, wu, wd, *biases)

    def split(ls):
        it = iter(ls[4:])
        return ls[:4], (next(it) if b1 is not None else None), (next(it) if b2 is not None else None)

    (xe, we, ue, de), be1, be2 = split(got_leaves)
    (xr, wr, ur, dr), br1, br2 = split(want_leaves)
    got = gt.moe_experts(xe, ids, we, ue, de, activation, gate_layout, b_gate_up=be1, b_down=be2)
    want = reference(xr, ids, wr, ur, dr, activation, gate_layout, br1, br2)
    torch.testing.assert_close(got.double(), want, rtol=2e-4, atol=2e-4)
    grad = torch.randn(got.shape, generator=torch.Generator().manual_seed(5))
    (got * grad).sum().backward()
    (want * grad.double()).sum().backward()
    for a, b in zip(got_leaves, want_leaves):
        torch.testing.assert_close(a.grad.double(), b.grad.double(), rtol=5e-4, atol=5e-4)


def test_expert_biases_under_torch_compile_give_the_eager_gradients():
    x, ids, w, wu, wd = problem(12, 4, 2, "swiglu_oss")
    g = torch.Generator().manual_seed(3)
    b1, b2 = torch.randn(wu.shape[0], wu.shape[-1], generator=g), torch.randn(wd.shape[0], wd.shape[-1], generator=g)
    eager, comp = leaves(x, w, wu, wd, b1, b2), leaves(x, w, wu, wd, b1, b2)

    def run(f, ls):
        out = f(ls[0], ids, *ls[1:4], "swiglu_oss", "interleaved", b_gate_up=ls[4], b_down=ls[5])
        out.backward(torch.ones_like(out))
        return [out.detach()] + [t.grad for t in ls]

    for a, b in zip(run(gt.moe_experts, eager), run(torch.compile(gt.moe_experts, fullgraph=True), comp)):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_bad_biases_are_refused_naming_them():
    x, ids, w, wu, wd = problem(6, 3, 2, "swiglu")
    with pytest.raises(ValueError, match=r"b_gate_up: must be a floating-point \(3, 32\)"):
        gt.moe_experts(x, ids, w, wu, wd, b_gate_up=torch.zeros(3, 31))
    with pytest.raises(ValueError, match=r"b_down: must be a floating-point \(3, 24\)"):
        gt.moe_experts(x, ids, w, wu, wd, b_down=torch.zeros(3, 24, dtype=torch.int32))


def test_a_second_backward_through_one_forward_gives_the_same_gradients():
    # The first backward frees h; the second (retain_graph=True) makes it again by the up projection.
    x, ids, w, wu, wd = problem(12, 4, 2, "swiglu")
    x, w, wu, wd = leaves(x, w, wu, wd)
    out = gt.moe_experts(x, ids, w, wu, wd).sum()
    first = torch.autograd.grad(out, [x, w, wu, wd], retain_graph=True)
    second = torch.autograd.grad(out, [x, w, wu, wd])
    for a, b in zip(first, second):
        assert torch.equal(a, b)


def backward_peak(layer, T, E, k, H_, I_, seed):
    """(bytes one backward of `layer` (moe_experts or its compiled form) allocates at its peak above what
    the forward left allocated, the byte sizes of its bf16 tensors by name) on a bf16 problem of those
    sizes, plans and kernels made by a step before the measure."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, H_, generator=g).cuda().bfloat16().requires_grad_(True)
    ids = torch.stack([torch.randperm(E, generator=g)[:k] for _ in range(T)]).cuda()
    w = torch.rand(T, k, generator=g).cuda().bfloat16().requires_grad_(True)
    wu = (torch.randn(E, H_, 2 * I_, generator=g) / H_ ** 0.5).cuda().bfloat16().requires_grad_(True)
    wd = (torch.randn(E, I_, H_, generator=g) / I_ ** 0.5).cuda().bfloat16().requires_grad_(True)
    grad = torch.randn(T, H_, generator=g).cuda().bfloat16()
    torch.autograd.grad(layer(x, ids, w, wu, wd), [x, w, wu, wd], grad)  # plans and kernels outside the measure
    out = layer(x, ids, w, wu, wd)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    grads = torch.autograd.grad(out, [x, w, wu, wd], grad)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - before
    assert all(t is not None for t in grads)
    S, bf = T * k, 2
    return peak, dict(h=S * 2 * I_ * bf, dh=S * 2 * I_ * bf, a_scaled=S * I_ * bf, dxs=S * H_ * bf, dx=T * H_ * bf,
                      d_w=(E * H_ * 2 * I_ + E * I_ * H_) * bf)


def within(peak, budget):
    """The peak within its budget: 5% and 2 MiB of slack (the ds partials, small vectors)."""
    return peak <= 1.05 * budget + (2 << 20)


@pytest.mark.gpu
def test_the_step_peak_holds_the_pre_activation_only_until_the_weight_gradients():
    # Weight gradients that dominate the step's peak (few large experts, as Mixtral): h (S x 2I) is
    # freed after the dgated GEMM, so the peak above the forward's allocations is the gradients, dh
    # and dx less h, not the gradients, dh and dx on top of h.
    peak, b = backward_peak(gt.moe_experts, 1024, 8, 2, 1024, 1024, seed=12)
    budget = max(b["d_w"] + b["dh"] + b["dx"] - b["h"], b["dh"] + b["a_scaled"] + b["dxs"] + b["dx"])
    assert not within(budget + b["h"], budget)  # the measure tells the two apart
    assert within(peak, budget), f"backward peak {peak / 2**20:.1f} MiB, budget {budget / 2**20:.1f} MiB"


@pytest.mark.gpu
def test_the_compiled_step_frees_the_pre_activation_between_its_two_backward_ops():
    # Under torch.compile the backward is two custom ops, the first the only reader of h: the graph
    # frees h between them, so the peak is the gradients, dh, dx and s act(h) less h (gated: h is
    # twice s act(h)), not the gradients, dh and dx on top of h.
    peak, b = backward_peak(torch.compile(gt.moe_experts, fullgraph=True), 2048, 8, 2, 1024, 1024, seed=13)
    budget = max(b["d_w"] + b["dh"] + b["dx"] + b["a_scaled"] - b["h"], b["dh"] + b["a_scaled"] + b["dxs"] + b["dx"])
    assert not within(b["d_w"] + b["dh"] + b["dx"], budget)  # the measure tells the two apart
    assert within(peak, budget), f"backward peak {peak / 2**20:.1f} MiB, budget {budget / 2**20:.1f} MiB"


@pytest.mark.gpu
def test_the_backward_peak_is_the_gradients_and_dh_never_beside_the_pair_rows():
    # The backward's schedule keeps its memory: the (S, H) data-gradient rows are combined and freed
    # before the weight gradients exist, and s act(h) is freed after dW2. Its peak above what the
    # forward left allocated is the larger of those two moments (bf16 tensors; the ds partials and
    # small vectors in the slack); the order before (weight gradients first) held all of them at once.
    peak, b = backward_peak(gt.moe_experts, 4096, 16, 4, 512, 256, seed=11)
    budget = max(b["d_w"] + b["dh"] + b["dx"], b["dh"] + b["a_scaled"] + b["dxs"] + b["dx"])
    assert within(peak, budget), f"backward peak {peak / 2**20:.1f} MiB, budget {budget / 2**20:.1f} MiB"


@pytest.mark.gpu
def test_the_forward_without_gradients_writes_no_pre_activation_and_equals_the_training_forward():
    # Without gradients the up projection reads x through the index and stores the activation alone:
    # no h (S x 2I) is allocated, and the output is the training forward's (the same op, one store
    # fewer; the ranking may take another tile there, so to bf16's rounding, not bit for bit).
    T, E, k, H_, I_ = 2048, 16, 4, 512, 512
    x, ids, w, wu, wd = problem(T, E, k, "swiglu", seed=21)
    x, ids, w, wu, wd = [t.cuda() for t in (x.bfloat16(), ids, w, wu.bfloat16(), wd.bfloat16())]
    wu.requires_grad_(True)
    want = gt.moe_experts(x, ids, w, wu, wd).detach()
    with torch.no_grad():
        gt.moe_experts(x, ids, w, wu, wd)  # plans and kernels made before the measured call
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        got = gt.moe_experts(x, ids, w, wu, wd)
        peak = torch.cuda.max_memory_allocated() - before
    torch.testing.assert_close(got, want, rtol=1.6e-2, atol=1e-3 * want.abs().max().item())
    # a (S x I) and the down projection's rows (S x H) and out (T x H), bf16; no h (S x 2I)
    S = T * k
    assert peak <= S * I_ * 2 + S * H_ * 2 + T * H_ * 2 + (2 << 20), f"peak {peak / 2**20:.1f} MiB"
