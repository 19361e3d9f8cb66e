# python/gemmops/torch/_routing.py: the MoE step's routing (the (token, choice) pairs sorted by expert)
# by gemmops.route's three kernels, or by torch ops (sort, searchsorted, a scatter) where those are
# not offered
# SPDX-License-Identifier: Apache-2.0
from typing import Tuple

import torch

from .. import _gemmops as _core
from ._combine import pair_rows
from ._dispatch import _raw_stream
from ._env import torch_routing_asked


def kernel_offered(device: torch.device) -> bool:
    """gemmops.route's kernels on a CUDA device (they passed the GPU suite on an H100 on 2026-12-07),
    unless GEMMOPS_ROUTING=torch asks for torch's sort (read at each call: a comparison, or a way
    around a routing kernel fault)."""
    return device.type == "cuda" and not torch_routing_asked()


def route_by_torch(topk_ids: torch.Tensor, num_experts: int) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
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


def route_pairs(topk_ids: torch.Tensor, num_experts: int, scores: torch.Tensor
                ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(offsets (E,), rows (T k,), pair (T, k), sorted scores (T k,)): each expert's exclusive end row,
    each sorted row's token, each (token, choice)'s row (int32), and each row's score (scores: (T, k)
    fp32). Stable; ids outside [0, E) last. One call of gemmops.route (three kernels) where offered,
    else about ten torch ops; the same values either way. No host synchronisation."""
    tokens, k = topk_ids.shape
    if kernel_offered(topk_ids.device) and 1 <= num_experts <= 8192:
        ids = topk_ids.to(torch.int32).contiguous()
        device = ids.device
        offsets = torch.empty(num_experts, dtype=torch.int32, device=device)
        rows = torch.empty(tokens * k, dtype=torch.int32, device=device)
        pair = torch.empty((tokens, k), dtype=torch.int32, device=device)
        sorted_scores = torch.empty(tokens * k, dtype=torch.float32, device=device)
        ws_bytes = _core.route_workspace_size(tokens * k, num_experts)
        ws = torch.empty(ws_bytes, dtype=torch.uint8, device=device) if ws_bytes else None
        _core.route(ids, num_experts, offsets, rows, pair, scores, sorted_scores,
                    0 if ws is None else ws.data_ptr(), ws_bytes, _raw_stream(device.index))
        return offsets, rows, pair, sorted_scores
    order, offsets, token = route_by_torch(topk_ids, num_experts)
    return offsets, token.to(torch.int32), pair_rows(order, tokens, k), scores.reshape(-1)[order]
