# python/gemmops/torch/_moe_op.py: moe_experts as torch custom ops (the forward, and the backward in two:
# the GEMM that reads h, then the rest, so a compiled graph frees h between them), each with a fake
# kernel, so that torch.compile(fullgraph=True) keeps the layer in its graph
# SPDX-License-Identifier: Apache-2.0
from typing import List, Optional, Tuple

import torch

from . import moe

_GATED = ("swiglu", "swiglu_oss")


@torch.library.custom_op("gemmops::moe_experts_forward", mutates_args=())
def _forward(x: torch.Tensor, topk_ids: torch.Tensor, topk_weights: torch.Tensor, w_gate_up: torch.Tensor,
             w_down: torch.Tensor, activation: str, gate_layout: str, keep: bool, b_gate_up: Optional[torch.Tensor],
             b_down: Optional[torch.Tensor]) -> List[torch.Tensor]:
    """[out, offsets, rows, pair, h, sorted scores]: the layer's output and, with `keep`, what its
    backward needs (empty tensors without)."""
    out, saved = moe.forward_step(x, topk_ids, topk_weights, w_gate_up, w_down, activation, gate_layout, keep,
                                  b_gate_up, b_down)
    if saved is None:
        return [out, *_fake_saved(x, topk_ids, w_gate_up, keep=False)]  # empty tensors, the fake's shapes
    return [out, *saved]


def _fake_saved(x, topk_ids, w_gate_up, keep: bool) -> Tuple[torch.Tensor, ...]:
    """Empty tensors of the saved tensors' shapes (without `keep`: none saved, every size 0)."""
    tokens, k = topk_ids.shape
    pairs = tokens * k if keep else 0
    i32 = dict(dtype=torch.int32, device=x.device)
    return (torch.empty(w_gate_up.shape[0] if keep else 0, **i32), torch.empty(pairs, **i32),
            torch.empty((tokens if keep else 0, k if keep else 0), **i32),
            x.new_empty((pairs, w_gate_up.shape[-1])),
            torch.empty(pairs, dtype=torch.float32, device=x.device))


@_forward.register_fake
def _forward_fake(x, topk_ids, topk_weights, w_gate_up, w_down, activation, gate_layout, keep, b_gate_up, b_down):
    return [x.new_empty(x.shape), *_fake_saved(x, topk_ids, w_gate_up, keep)]


@torch.library.custom_op("gemmops::moe_experts_backward_data", mutates_args=())
def _backward_data(dout: torch.Tensor, x: torch.Tensor, w_down: torch.Tensor, offsets: torch.Tensor,
                   rows: torch.Tensor, h: torch.Tensor, scores: torch.Tensor, activation: str,
                   gate_layout: str) -> List[torch.Tensor]:
    """[dh, s act(h), ds]: the backward's one GEMM that reads h (moe.backward_data). Its own op so that a
    compiled graph frees h before the weight gradients exist."""
    state = moe.backward_data(dout.to(x.dtype), w_down, offsets, rows, h, scores, activation, gate_layout)
    return [state["dh"], state["a_scaled"], state["ds"]]


@_backward_data.register_fake
def _backward_data_fake(dout, x, w_down, offsets, rows, h, scores, activation, gate_layout):
    pairs, i = rows.shape[0], w_down.shape[-2]
    return [h.new_empty(h.shape), h.new_empty((pairs, i)), torch.empty(pairs, dtype=torch.float32, device=x.device)]


@torch.library.custom_op("gemmops::moe_experts_backward_rest", mutates_args=())
def _backward_rest(dout: torch.Tensor, dh: torch.Tensor, a_scaled: torch.Tensor, ds: torch.Tensor, x: torch.Tensor,
                   w_gate_up: torch.Tensor, w_down: torch.Tensor, offsets: torch.Tensor, rows: torch.Tensor,
                   pair: torch.Tensor, scores: torch.Tensor, weight_dtype: torch.dtype, up_transposed: bool,
                   down_transposed: bool, b_gate_up: Optional[torch.Tensor],
                   b_down: Optional[torch.Tensor]) -> List[torch.Tensor]:
    """[dx, d_topk_weights, d_w_gate_up, d_w_down, d_b_gate_up, d_b_down] from dout and _backward_data's outputs
    (moe.backward_rest; a bias's gradient empty where it is absent); the weight gradients in the layouts the
    flags say (moe.weight_grad_like), decided from the forward's inputs: the saved weights' strides may differ."""
    state = {"dout": moe._GatheredRows(dout.to(x.dtype).contiguous(), rows), "dh": dh, "a_scaled": a_scaled, "ds": ds}
    grads = moe.backward_rest(state, x, w_gate_up, w_down, offsets, rows, pair, scores, weight_dtype,
                              (up_transposed, down_transposed), b_gate_up, b_down)
    # A bias's gradient, or an empty tensor where it is absent (an op returns tensors only).
    return [g if g is not None else x.new_empty(0) for g in grads]


@_backward_rest.register_fake
def _backward_rest_fake(dout, dh, a_scaled, ds, x, w_gate_up, w_down, offsets, rows, pair, scores, weight_dtype,
                        up_transposed, down_transposed, b_gate_up, b_down):
    return [x.new_empty(x.shape), torch.empty(pair.shape, dtype=weight_dtype, device=x.device),
            moe.weight_grad_like(w_gate_up, up_transposed), moe.weight_grad_like(w_down, down_transposed),
            b_gate_up.new_empty(b_gate_up.shape) if b_gate_up is not None else x.new_empty(0),
            b_down.new_empty(b_down.shape) if b_down is not None else x.new_empty(0)]


def _setup_context(ctx, inputs, output):
    x, _, topk_weights, w_gate_up, w_down, activation, gate_layout, _, b_gate_up, b_down = inputs
    ctx.biases = (b_gate_up is not None, b_down is not None)
    kept = tuple(b for b in (b_gate_up, b_down) if b is not None)
    ctx.save_for_backward(x, w_gate_up, w_down, *output[1:], *kept)
    ctx.weight_dtype, ctx.activation, ctx.gate_layout = topk_weights.dtype, activation, gate_layout
    ctx.grad_layouts = (moe.transposed_view(w_gate_up), moe.transposed_view(w_down))


def _backward_of_forward(ctx, grads):
    x, w_gate_up, w_down, offsets, rows, pair, h, scores, *kept = ctx.saved_tensors
    b_gate_up = kept.pop(0) if ctx.biases[0] else None
    b_down = kept.pop(0) if ctx.biases[1] else None
    dh, a_scaled, ds = _backward_data(grads[0], x, w_down, offsets, rows, h, scores, ctx.activation, ctx.gate_layout)
    dx, d_topk, d_w1, d_w2, d_b1, d_b2 = _backward_rest(grads[0], dh, a_scaled, ds, x, w_gate_up, w_down, offsets,
                                                        rows, pair, scores, ctx.weight_dtype, *ctx.grad_layouts,
                                                        b_gate_up, b_down)
    return (dx, None, d_topk, d_w1, d_w2, None, None, None, d_b1 if ctx.biases[0] else None,
            d_b2 if ctx.biases[1] else None)


_forward.register_autograd(_backward_of_forward, setup_context=_setup_context)


def moe_experts_op(x, topk_ids, topk_weights, w_gate_up, w_down, activation: str, gate_layout: str,
                   b_gate_up=None, b_down=None):
    """moe_experts through the custom ops (what torch.compile traces): (T, H)."""
    params = [t for t in (x, topk_weights, w_gate_up, w_down, b_gate_up, b_down) if t is not None]
    keep = torch.is_grad_enabled() and any(t.requires_grad for t in params)
    return _forward(x, topk_ids, topk_weights, w_gate_up, w_down, activation, gate_layout, keep, b_gate_up,
                    b_down)[0]
