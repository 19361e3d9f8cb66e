# python/gemmops/torch/moe.py: a MoE experts layer as six grouped GEMMs and two gather-reduces a training
# step, the activation, its gradient and the score gradient fused into the GEMMs' epilogues
# SPDX-License-Identifier: Apache-2.0
"""``gemmops.torch.moe_experts``: the experts of a MoE layer, forward and backward.

    y = gemmops.torch.moe_experts(x, topk_ids, topk_weights, w_gate_up, w_down, activation="swiglu")

x (T, H); topk_ids, topk_weights (T, k); w_gate_up (E, H, 2I) for the gated activations (gate and
up halves concatenated, or interleaved with ``gate_layout="interleaved"``), (E, H, I) otherwise;
w_down (E, I, H). Any strides: the transposed view of an ``nn.Linear``-style (E, N, K) weight is
served without a copy, and each weight's gradient comes in its weight's layout (contiguous, or the
transposed view of a contiguous tensor), so autograd keeps it as ``.grad`` without copying it into
the weight's layout. Ids outside [0, E) (expert-parallel sentinels) add nothing.

The step (../MOE_STEP.md): the (token, choice) pairs sorted by expert on the device (no host
synchronisation). Forward: the up projection reading x's rows through the pairs' token index, its
epilogue storing the pre-activation h (kept for backward) and the activation a; the down
projection; each token's k rows weighted by its scores and summed in choice order by the
gather-reduce kernel (deterministic, no atomics). Backward: the down projection's data gradient
reading dout's rows through the index, its epilogue writing dh, s act(h) and the score gradient's
partials; both weight gradients (K-grouped, reading x's and dout's token rows through the index);
the up projection's data gradient; the gather-reduce of each token's rows. Nothing is recomputed
(but h, in a second backward through one forward: the eager backward frees h after the one GEMM
that reads it). Where no operator serves a fused piece (a dtype or device without one, or a piece
not yet offered) the same step runs on gathered copies and torch ops. Forward without gradients
keeps no h (where it reads x through the index, h is written and dropped). With GEMMOPS_AUTOTUNE=1
each piece's operator is the fastest of the ranking's first few, timed on its first call
(docs/environment.md).
"""

from typing import Optional, Tuple

import torch
import torch.nn.functional as F

from . import grouped_mm
from ._combine import combine
from ._fused import (grouped_mm_dgated, grouped_mm_epilogue, grouped_mm_k_gathered,
                     grouped_mm_with_pre_activation, step_grouped_mm)
from ._moe_bias import add_row_bias, bias_gradients
from ._routing import route_by_torch, route_pairs

__all__ = ["ACTIVATIONS", "apply_activation", "moe_experts", "route"]

ACTIVATIONS = ("swiglu", "swiglu_oss", "silu", "gelu_tanh", "relu_squared")
_GATED = ("swiglu", "swiglu_oss")


def route(topk_ids: torch.Tensor, num_experts: int) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(order, offsets, token): the flattened (token, choice) pairs sorted by expert (stable), the
    int32 group ends (E,) and each sorted pair's token. Ids outside [0, E) sort last, past
    offsets[-1]. On the device, no host synchronisation."""
    return route_by_torch(topk_ids, num_experts)


def apply_activation(p: torch.Tensor, activation: str, gate_layout: str, alpha: float = 1.702,
                limit: float = 7.0) -> torch.Tensor:
    """The op's meaning in torch (gemmops/epilogue.hpp), in p's dtype: p is the (rows, N) product."""
    if activation in _GATED:
        n = p.shape[-1] // 2
        gate, up = (p[:, :n], p[:, n:]) if gate_layout == "concatenated" else (p[:, 0::2], p[:, 1::2])
        if activation == "swiglu":
            return F.silu(gate) * up
        g = gate.clamp(max=limit)
        return (up.clamp(-limit, limit) + 1) * g * torch.sigmoid(alpha * g)
    if activation == "silu":
        return F.silu(p)
    if activation == "gelu_tanh":
        return F.gelu(p, approximate="tanh")
    return F.relu(p).square()


def _row_limit(offsets: torch.Tensor) -> torch.Tensor:
    """The rows holding pairs: offsets[-1:] (no experts: none)."""
    return offsets[-1:] if offsets.numel() else torch.zeros(1, dtype=torch.int32, device=offsets.device)


def _up(x, rows, w_gate_up, offsets, activation, gate_layout, keep_pre_activation, bias=None):
    """(a, h): the activation of the up projection of x's rows gathered by `rows` (plus each row's
    expert's bias (E, N_up)), and its pre-activation h when the backward needs it (else None). One
    kernel reading x through the index where an operator serves that; else the gathered copy of x,
    then torch's ops where no operator fuses the activation."""
    # Without gradients no h is written where an operator serves the gathered A beside the activation's
    # store alone; else h is written and dropped where that costs less than the gathered copy of x it
    # spares, written and read again (h's N_up columns against x's 2 H; Qwen3-30B-A3B: 1536 against
    # 4096; not Mixtral's 28672).
    keep = keep_pre_activation or bias is not None  # (the fused bias comes with the pre-activation's op)
    if not keep:
        # x read through the index, the activation stored and no h at all (the GPU suite's gathered A
        # beside the plain SwiGLU's store passed on an H100, 2026-12-07, fifth session).
        r = grouped_mm_with_pre_activation(x, w_gate_up, offsets, activation, gate_layout, a_row_index=rows,
                                           keep_pre_activation=False)
        if r is not None:
            return r
    if keep or w_gate_up.shape[-1] <= 2 * x.shape[-1]:
        r = grouped_mm_with_pre_activation(x, w_gate_up, offsets, activation, gate_layout, bias=bias,
                                           a_row_index=rows)
        if r is not None:
            return r if keep_pre_activation else (r[0], None)
    xs = x[rows.long()]
    if keep:
        r = grouped_mm_with_pre_activation(xs, w_gate_up, offsets, activation, gate_layout, bias=bias)
        if r is not None:
            return r if keep_pre_activation else (r[0], None)
        h = grouped_mm(xs, w_gate_up, offsets)
        if bias is not None:
            h = add_row_bias(h, bias, offsets)
        return apply_activation(h.float(), activation, gate_layout).to(x.dtype), (h if keep_pre_activation else None)
    a = grouped_mm_epilogue(xs, w_gate_up, offsets, activation, gate_layout)
    if a is None:  # no operator fuses the activation here
        a = apply_activation(grouped_mm(xs, w_gate_up, offsets), activation, gate_layout).to(x.dtype)
    return a, None


class _GatheredRows:
    """A tensor's rows gathered by the pairs' token index: copied on first use only, and only once
    (the fallbacks of several steps may each need the copy)."""

    def __init__(self, t: torch.Tensor, rows: torch.Tensor):
        self.source, self.rows, self._copy = t, rows, None

    def copy(self) -> torch.Tensor:
        if self._copy is None:
            self._copy = self.source[self.rows.long()]
        return self._copy


def _down_dgrad(dout: _GatheredRows, w_down, offsets, h, scores, activation, gate_layout):
    """(dh, s act(h), ds) of the down projection's data gradient (MOE_STEP.md step 4): one kernel
    reading dout's rows through the index where an operator serves that; else the gathered copy,
    then torch's ops for the activation's backward where no operator fuses it."""
    w2t = w_down.transpose(-2, -1)
    r = grouped_mm_dgated(dout.source, w2t, offsets, h, scores, activation, gate_layout, a_row_index=dout.rows)
    if r is not None:
        return r
    dys = dout.copy()
    r = grouped_mm_dgated(dys, w2t, offsets, h, scores, activation, gate_layout)
    if r is not None:
        return r
    d_a = grouped_mm(dys, w2t, offsets).float()  # (S, I): the gradient of act(h), unscaled
    hp = h.float().requires_grad_(True)
    with torch.enable_grad():
        a = apply_activation(hp, activation, gate_layout)
    (dh,) = torch.autograd.grad(a, hp, d_a * scores.unsqueeze(-1))
    a = a.detach()
    return dh.to(h.dtype), (a * scores.unsqueeze(-1)).to(h.dtype), (d_a * a).sum(dim=-1)


def forward_step(x, topk_ids, topk_weights, w_gate_up, w_down, activation: str, gate_layout: str, keep: bool,
                 b_gate_up=None, b_down=None):
    """The forward (MOE_STEP.md steps 1-3): (out, saved), saved = (offsets, rows, pair, h, sorted scores)
    for the backward when `keep`, else None (no pre-activation is stored)."""
    scores = topk_weights.to(torch.float32).contiguous()
    # The sorted scores (S,): sentinel pairs lie past offsets[-1], where nothing reads them.
    offsets, rows, pair, sorted_scores = route_pairs(topk_ids, w_gate_up.shape[0], scores)
    a, h = _up(x, rows, w_gate_up, offsets, activation, gate_layout, keep_pre_activation=keep, bias=b_gate_up)
    y = step_grouped_mm(a, w_down, offsets, bias=b_down)  # (S, H): the scores are applied by the combine
    # Each token's rows weighted and summed in choice order; sentinel pairs are not read.
    out = combine(y, pair, scores, row_limit=_row_limit(offsets), out_dtype=x.dtype)
    return out, ((offsets, rows, pair, h, sorted_scores) if keep else None)


def transposed_view(w: torch.Tensor) -> bool:
    """Whether weight w (E, R, C) is the transposed view of a contiguous (E, C, R) (nn.Linear's weights
    seen K-major): its gradient is then made in that layout, which autograd keeps as .grad uncopied."""
    return w.stride(-2) == 1 and w.transpose(-2, -1).is_contiguous()


def weight_grad_like(w: torch.Tensor, transposed: bool) -> torch.Tensor:
    """An empty tensor of w's shape in the layout backward_rest gives its gradient: the transposed view
    of a contiguous tensor where `transposed`, else contiguous. (The custom op's fake says so too.)"""
    if transposed:
        return w.new_empty((*w.shape[:-2], w.shape[-1], w.shape[-2])).transpose(-2, -1)
    return w.new_empty(w.shape)


def _weight_gradient(lhs, rhs, offsets, rows, lhs_gathered: bool, transposed: bool):
    """(E, M, N) = lhs^T rhs per expert, K-grouped over its pairs (lhs (.., M), rhs (.., N); the
    gathered one is the token rows' source, read through `rows`, the other has a row per pair), in the
    layout weight_grad_like(.., transposed) promises; None where no operator serves it.
    First with the gathered operand as A, which a 2-CTA cluster serves (the other multicast), its
    result stored row-major or M-major (each group's tile transposed, the TMA epilogue) as the
    layout asks; else with it as B (no cluster). E.g. dW2 of an nn.Linear-style w_down is dout^T a'
    stored row-major, and dW1 of an nn.Linear-style w_gate_up is x^T dh stored M-major: autograd
    would copy a gradient of another layout into its weight's (a strided transpose of the whole
    weight: 2.8 ms a step on an H100 for dW1 at Qwen3-30B-A3B's sizes, T = 8192, where the GEMM takes
    0.85 ms)."""
    gathered, other = (lhs, rhs) if lhs_gathered else (rhs, lhs)
    # The product has the gathered operand's columns as M (as A) or as N (as B); it is the gradient
    # itself when lhs is that side, else its transpose, whose row-major is the other layout.
    for as_a in (True, False):
        is_gradient = as_a == lhs_gathered
        a, b = (gathered, other) if as_a else (other, gathered)
        index = {"a_k_index": rows} if as_a else {"b_k_index": rows}
        product = grouped_mm_k_gathered(a.t(), b, offsets, out_m_major=transposed == is_gradient, **index)
        if product is not None:
            return product if is_gradient else product.transpose(-2, -1)
    return None


def _in_layout(grad: torch.Tensor, transposed: bool) -> torch.Tensor:
    """grad in the layout weight_grad_like promises (a fallback may have made another)."""
    if (transposed_view(grad) if transposed else grad.is_contiguous()):
        return grad
    return weight_grad_like(grad, transposed).copy_(grad)


def backward_data(dout, w_down, offsets, rows, h, scores, activation: str, gate_layout: str):
    """The backward's first GEMM, the only one that reads the pre-activation h (MOE_STEP.md step 4):
    {dout (its rows), dh, a_scaled (s act(h)), ds} for backward_rest, which takes each out of the dict
    and frees it when done with it. A caller that drops its h after this frees it before the weight
    gradients exist, so h never shares their peak."""
    dout_rows = _GatheredRows(dout.contiguous(), rows)
    dh, a_scaled, ds = _down_dgrad(dout_rows, w_down, offsets, h, scores, activation, gate_layout)
    return {"dout": dout_rows, "dh": dh, "a_scaled": a_scaled, "ds": ds}


def backward_rest(state, x, w_gate_up, w_down, offsets, rows, pair, scores, weight_dtype, grad_layouts=(False, False),
                  b_gate_up=None, b_down=None):
    """The backward after backward_data (MOE_STEP.md steps 5-8): (dx, d_topk_weights, d_w_gate_up,
    d_w_down, d_b_gate_up, d_b_down), a bias's gradient None where it has none. Takes the
    intermediates out of backward_data's dict (emptied), so that each is freed as soon as this step
    is done with it (a caller's reference would keep it to the end). grad_layouts: whether each
    weight gradient (gate/up, down) is made as the transposed view of a contiguous tensor
    (transposed_view of the weight as the forward was given it: its strides may differ under
    torch.compile, so the forward decides)."""
    up_t, down_t = grad_layouts
    tokens, k = pair.shape
    dout, dh, a_scaled, ds = (state.pop(key) for key in ("dout", "dh", "a_scaled", "ds"))
    d_b1, d_b2, ds_extra = bias_gradients(dout.source, dh, offsets, pair, scores, b_gate_up is not None, b_down)
    # The data gradient first: its (S, H) rows are combined and freed before the weight gradients
    # (E x the weights' size) exist, so they never share the peak (Qwen3-30B-A3B at T = 8192: 268 MB).
    dxs = step_grouped_mm(dh, w_gate_up.transpose(-2, -1), offsets)     # (S, H)
    dx = combine(dxs, pair, row_limit=_row_limit(offsets))
    del dxs
    # ds is 0 on rows past offsets[-1] (the zero tail): sentinel choices get zero gradients.
    d_topk = ds[pair.long()].view(tokens, k)
    if ds_extra is not None:  # the down bias's share (bias_gradients)
        d_topk = d_topk + ds_extra
    d_topk = d_topk.to(weight_dtype)
    # The weight gradients: K-grouped over each expert's pairs, reading dout's and x's token rows
    # through the index where an operator serves that, else from gathered copies.
    d_w_down = _weight_gradient(a_scaled, dout.source, offsets, rows, False, down_t)  # (E, I, H)
    if d_w_down is None:
        d_w_down = grouped_mm(a_scaled.t(), dout.copy(), offsets)
    del a_scaled, dout  # (S, I), and dout's gathered copy if a fallback made one
    d_w_gate_up = _weight_gradient(x, dh, offsets, rows, True, up_t)  # (E, H, N_up)
    if d_w_gate_up is None:
        d_w_gate_up = grouped_mm(x[rows.long()].t(), dh, offsets)
    return (dx, d_topk, _in_layout(d_w_gate_up.to(w_gate_up.dtype), up_t), _in_layout(d_w_down.to(w_down.dtype), down_t),
            None if d_b1 is None else d_b1.to(b_gate_up.dtype), None if d_b2 is None else d_b2.to(b_down.dtype))


def _saved_tensor_hooks_active() -> bool:
    """Whether saved-tensor hooks are in force (activation checkpointing, offloading to the host): a
    tensor kept outside save_for_backward would escape them (and stay on the device)."""
    try:
        return torch._C._autograd._top_saved_tensors_default_hooks(False) is not None
    except (AttributeError, TypeError, RuntimeError):  # a torch without it: the saved-tensor path
        return True


class _MoEExperts(torch.autograd.Function):
    """The eager path: six grouped GEMMs and two gather-reduces a step (../MOE_STEP.md); forward keeps
    x, the pre-activation h, the sort and the scores; backward recomputes nothing. h is held on the
    context, not among the saved tensors, so that backward frees it after the one GEMM that reads
    it, before the weight gradients are made (Mixtral-8x7B at T = 4096: 448 MiB less at the peak);
    but among them where saved-tensor hooks are in force (activation checkpointing drops it,
    offloading moves it), as every saved tensor. A second backward through the same forward
    (retain_graph=True) makes h again by the up projection."""

    @staticmethod
    def forward(ctx, x, topk_ids, topk_weights, w_gate_up, w_down, activation, gate_layout, b_gate_up, b_down):
        out, saved = forward_step(x, topk_ids, topk_weights, w_gate_up, w_down, activation, gate_layout,
                                  keep=any(ctx.needs_input_grad), b_gate_up=b_gate_up, b_down=b_down)
        if saved is not None:
            offsets, rows, pair, h, scores = saved
            ctx.h_saved = _saved_tensor_hooks_active()
            ctx.biases = (b_gate_up is not None, b_down is not None)
            kept = ((b_gate_up,) if b_gate_up is not None else ()) + ((b_down,) if b_down is not None else ())
            ctx.save_for_backward(x, w_gate_up, w_down, offsets, rows, pair, scores, *kept,
                                  *((h,) if ctx.h_saved else ()))
            ctx.pre_activation = None if ctx.h_saved else h
            ctx.weight_dtype = topk_weights.dtype
            ctx.activation, ctx.gate_layout = activation, gate_layout
            ctx.grad_layouts = (transposed_view(w_gate_up), transposed_view(w_down))
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dout):
        x, w_gate_up, w_down, offsets, rows, pair, scores, *kept = ctx.saved_tensors
        b_gate_up = kept.pop(0) if ctx.biases[0] else None
        b_down = kept.pop(0) if ctx.biases[1] else None
        h = kept[0] if ctx.h_saved else ctx.pre_activation
        ctx.pre_activation = None
        if h is None:  # a second backward through this forward (retain_graph=True): h made again, the same bits
            _, h = _up(x, rows, w_gate_up, offsets, ctx.activation, ctx.gate_layout, keep_pre_activation=True,
                       bias=b_gate_up)
        state = backward_data(dout.to(x.dtype), w_down, offsets, rows, h, scores, ctx.activation, ctx.gate_layout)
        del h, kept  # without hooks the context's reference is gone too: h is freed here
        dx, d_topk, d_w1, d_w2, d_b1, d_b2 = backward_rest(state, x, w_gate_up, w_down, offsets, rows, pair, scores,
                                                           ctx.weight_dtype, ctx.grad_layouts, b_gate_up, b_down)
        return dx, None, d_topk, d_w1, d_w2, None, None, d_b1, d_b2


def moe_experts(x: torch.Tensor, topk_ids: torch.Tensor, topk_weights: torch.Tensor, w_gate_up: torch.Tensor,
                w_down: torch.Tensor, activation: str = "swiglu", gate_layout: str = "concatenated",
                b_gate_up: Optional[torch.Tensor] = None, b_down: Optional[torch.Tensor] = None) -> torch.Tensor:
    """The experts of a MoE layer (see the module's docstring): (T, H) -> (T, H). b_gate_up (E, N_up) and
    b_down (E, H): each expert's biases (gpt-oss), added to its up projection before the activation
    and to its down projection before the routing score (out = sum of s (a W2 + b2))."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation: must be one of {', '.join(ACTIVATIONS)}; got {activation!r}")
    if gate_layout not in ("concatenated", "interleaved"):
        raise ValueError(f"gate_layout: must be concatenated or interleaved; got {gate_layout!r}")
    if x.dim() != 2 or topk_ids.dim() != 2 or topk_ids.shape != topk_weights.shape or topk_ids.shape[0] != x.shape[0]:
        raise ValueError(f"x, topk_ids, topk_weights: must be (T, H), (T, k), (T, k); got {tuple(x.shape)}, "
                         f"{tuple(topk_ids.shape)}, {tuple(topk_weights.shape)}")
    E, H, n_up = w_gate_up.shape
    i = n_up // 2 if activation in _GATED else n_up
    if activation in _GATED and n_up % 2:
        raise ValueError(f"w_gate_up: a gated activation needs an even N (2I); got (E, H, N) = {tuple(w_gate_up.shape)}")
    if H != x.shape[1] or tuple(w_down.shape) != (E, i, H):
        raise ValueError(f"w_gate_up, w_down: must be (E, H, N_up) and (E, I, H) with H = {x.shape[1]} and I = "
                         f"{'N_up / 2' if activation in _GATED else 'N_up'}; got {tuple(w_gate_up.shape)} and "
                         f"{tuple(w_down.shape)}")
    for b, name, shape in ((b_gate_up, "b_gate_up", (E, n_up)), (b_down, "b_down", (E, H))):
        if b is not None and (tuple(b.shape) != shape or not b.is_floating_point() or b.device != x.device):
            raise ValueError(f"{name}: must be a floating-point {shape} on x's device; got {tuple(b.shape)} "
                             f"{b.dtype} on {b.device}")
    if torch.compiler.is_compiling():  # the opaque op, with its fake kernel and backward (_moe_op.py)
        from ._moe_op import moe_experts_op
        return moe_experts_op(x, topk_ids, topk_weights, w_gate_up, w_down, activation, gate_layout, b_gate_up, b_down)
    return _MoEExperts.apply(x, topk_ids, topk_weights, w_gate_up, w_down, activation, gate_layout, b_gate_up, b_down)
