# python/gemmops/torch/moe.py: a MoE experts layer with its activation and routing weights fused into the
# grouped GEMMs' epilogues, and a backward that recomputes instead of keeping the activations
# SPDX-License-Identifier: Apache-2.0
"""``gemmops.torch.moe_experts``: the experts of a MoE layer, forward and backward.

    y = gemmops.torch.moe_experts(x, topk_ids, topk_weights, w_gate_up, w_down, activation="swiglu")

x (T, H); topk_ids, topk_weights (T, k); w_gate_up (E, H, 2I) for the gated activations (gate and
up halves concatenated, or interleaved with ``gate_layout="interleaved"``), (E, H, I) otherwise;
w_down (E, I, H). Any strides: the transposed view of an ``nn.Linear``-style (E, N, K) weight is
served without a copy. Ids outside [0, E) (expert-parallel sentinels) add nothing.

Forward: the (token, choice) pairs sorted by expert (on the device, no host synchronisation), the
tokens gathered, the up projection with the activation fused into its store (the pre-activation
(S, 2I) is never written), the down projection with the routing weights fused as a row scale, and
each token's k rows summed in a fixed order (deterministic, no atomics). Backward keeps only x, the
routing and the weights: it recomputes the pre-activation with one grouped GEMM, then the
gradients of x, of the routing weights (a row-wise dot product), and of both weights (the K-grouped
form). Where no operator fuses an op (a dtype or device without one) the same steps run unfused.
"""

from typing import Tuple

import torch
import torch.nn.functional as F

from . import grouped_mm
from ._combine import combine, pair_rows
from ._fused import grouped_mm_epilogue

__all__ = ["ACTIVATIONS", "apply_activation", "moe_experts", "route"]

ACTIVATIONS = ("swiglu", "swiglu_oss", "silu", "gelu_tanh", "relu_squared")
_GATED = ("swiglu", "swiglu_oss")


def route(topk_ids: torch.Tensor, num_experts: int) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(order, offsets, token): the flattened (token, choice) pairs sorted by expert (stable), the
    int32 group ends (E,) and each sorted pair's token. Ids outside [0, E) sort last, past
    offsets[-1]. On the device, no host synchronisation."""
    k = topk_ids.shape[-1]
    flat = topk_ids.reshape(-1).long()
    flat = torch.where((flat < 0) | (flat >= num_experts), torch.full_like(flat, num_experts), flat)
    sorted_ids, order = torch.sort(flat, stable=True)
    experts = torch.arange(num_experts, device=flat.device, dtype=sorted_ids.dtype)
    offsets = torch.searchsorted(sorted_ids, experts, right=True, out_int32=True)
    return order, offsets, torch.div(order, k, rounding_mode="floor")


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


class _MoEExperts(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, topk_ids, topk_weights, w_gate_up, w_down, activation, gate_layout):
        tokens, k = topk_ids.shape
        order, offsets, token = route(topk_ids, w_gate_up.shape[0])
        # Sentinel pairs lie past offsets[-1]: their rows are zeros, their weights are not read.
        weights = topk_weights.reshape(-1)[order].to(torch.float32).contiguous()
        xs = x[token]
        h = grouped_mm_epilogue(xs, w_gate_up, offsets, activation, gate_layout)
        if h is None:  # no operator fuses the activation here
            h = apply_activation(grouped_mm(xs, w_gate_up, offsets), activation, gate_layout).to(x.dtype)
        y = grouped_mm_epilogue(h, w_down, offsets, "none", row_scale=weights)
        if y is None:
            y = (grouped_mm(h, w_down, offsets).float() * weights.unsqueeze(-1)).to(x.dtype)
        pair = pair_rows(order, tokens, k)
        ctx.save_for_backward(x, w_gate_up, w_down, order, offsets, token, weights, pair)
        ctx.shape = (tokens, k, topk_weights.dtype)
        ctx.activation, ctx.gate_layout = activation, gate_layout
        # Sentinel pairs (past offsets[-1]) are not read: their tokens' sums skip them.
        return combine(y, pair, row_limit=_row_limit(offsets))

    @staticmethod
    def backward(ctx, dout):
        x, w_gate_up, w_down, order, offsets, token, weights, pair = ctx.saved_tensors
        tokens, k, weight_dtype = ctx.shape
        xs = x[token]
        dy = dout.to(x.dtype)[token]  # each pair's row gets its token's gradient
        # The pre-activation again (one grouped GEMM), and the activation's own gradient from torch.
        p = grouped_mm(xs, w_gate_up, offsets).detach().requires_grad_(True)
        with torch.enable_grad():
            h = apply_activation(p, ctx.activation, ctx.gate_layout)
        dh_unweighted = grouped_mm(dy, w_down.transpose(-2, -1), offsets)  # (S, I)
        d_weights = (dh_unweighted.float() * h.detach().float()).sum(dim=-1)  # row-wise dot products
        dh = (dh_unweighted.float() * weights.unsqueeze(-1)).to(p.dtype)
        (dp,) = torch.autograd.grad(h, p, dh)
        dy_weighted = (dy.float() * weights.unsqueeze(-1)).to(x.dtype)
        h_rows = h.detach().to(x.dtype)
        d_w_down = grouped_mm(h_rows.t(), dy_weighted, offsets)     # (E, I, H): K-grouped over tokens
        d_w_gate_up = grouped_mm(xs.t(), dp.to(x.dtype), offsets)  # (E, H, N_up)
        dxs = grouped_mm(dp.to(x.dtype), w_gate_up.transpose(-2, -1), offsets)
        dx = combine(dxs, pair, row_limit=_row_limit(offsets))
        d_topk = torch.empty_like(d_weights).index_copy(0, order, d_weights).view(tokens, k).to(weight_dtype)
        return dx, None, d_topk, d_w_gate_up.to(w_gate_up.dtype), d_w_down.to(w_down.dtype), None, None


def moe_experts(x: torch.Tensor, topk_ids: torch.Tensor, topk_weights: torch.Tensor, w_gate_up: torch.Tensor,
                w_down: torch.Tensor, activation: str = "swiglu", gate_layout: str = "concatenated") -> torch.Tensor:
    """The experts of a MoE layer (see the module's docstring): (T, H) -> (T, H)."""
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
    return _MoEExperts.apply(x, topk_ids, topk_weights, w_gate_up, w_down, activation, gate_layout)
