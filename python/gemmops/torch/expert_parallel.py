# python/gemmops/torch/expert_parallel.py: MoE experts spread over the ranks of a torch.distributed group:
# route, dispatch by all-to-all, the local experts' grouped GEMMs on gemmops, combine by all-to-all
# SPDX-License-Identifier: Apache-2.0
"""Expert parallelism on ``torch.distributed``: each rank holds ``num_experts // world_size`` experts
(rank r the experts ``[r * E_local, (r + 1) * E_local)``) and its own tokens.

    layer = gemmops.torch.expert_parallel.ExpertParallelExperts(E, H, I, group=None)  # default group
    y = layer(x, topk_ids, topk_weights)     # x (T, H) this rank's tokens -> (T, H)

One step: the (token, choice) pairs sorted by expert, hence by the rank that owns it; the per-rank
counts exchanged (an all-to-all of G integers), then read on the host: the one host synchronisation
of a step, because ``all_to_all_single`` takes its split sizes as Python integers (torch offers
device-side splits only through symmetric memory on NVSHMEM GPUs). Then the rows travel by
``torch.distributed.nn.functional.all_to_all_single`` (differentiable: the backward sends the
gradients back the same way), the received rows are sorted by local expert, go through the experts'
up (gated or not) and down grouped GEMMs on ``gemmops.torch.grouped_mm``, come back by the reverse
all-to-all, are weighted by their routing weights and summed over the k choices in a fixed order
(deterministic, no atomics). NCCL on GPUs, gloo on the CPU (gemmops' CPU operators).
"""

from typing import Optional

import torch
import torch.distributed as dist
from torch.distributed.nn.functional import all_to_all_single

from . import grouped_mm
from .moe import apply_activation

__all__ = ["ExpertParallelExperts", "ExpertPlacement", "expert_parallel_experts", "local_experts_forward"]

_ACTIVATIONS = ("swiglu", "silu", "gelu_tanh", "relu_squared")


class ExpertPlacement:
    """Which rank holds which experts: contiguous blocks of ``num_experts // world_size``."""

    def __init__(self, num_experts: int, world_size: int, rank: int):
        if world_size < 1 or num_experts < 1:
            raise ValueError(f"expert placement: num_experts ({num_experts}) and world_size ({world_size}) must be >= 1")
        if num_experts % world_size:
            raise ValueError(f"expert placement: world_size ({world_size}) must divide num_experts ({num_experts})")
        if not 0 <= rank < world_size:
            raise ValueError(f"expert placement: rank ({rank}) must be in [0, {world_size})")
        self.num_experts, self.world_size, self.rank = num_experts, world_size, rank
        self.local = num_experts // world_size
        self.first = rank * self.local

    def owner(self, expert_ids: torch.Tensor) -> torch.Tensor:
        return torch.div(expert_ids, self.local, rounding_mode="floor")


def _counts(ids: torch.Tensor, bins: int) -> torch.Tensor:
    """How many of ids fall in each of bins (ids in [0, bins)), on the device, without a host sync."""
    out = torch.zeros(bins, dtype=torch.int64, device=ids.device)
    return out.index_add_(0, ids, torch.ones_like(ids))


def local_experts_forward(rows: torch.Tensor, local_ids: torch.Tensor, w_up: torch.Tensor, w_down: torch.Tensor,
                          activation: str = "swiglu") -> torch.Tensor:
    """The experts of one rank on rows (S, H) each routed to local expert local_ids[s]: returns (S, H)
    in the rows' order. w_up (E_local, H, N_up) and w_down (E_local, I, H), any strides (a transposed
    view of nn.Linear's (E, N, K) weights is served without a copy); N_up = 2I for swiglu."""
    e_local = w_up.shape[0]
    sorted_ids, order = torch.sort(local_ids, stable=True)
    ends = torch.searchsorted(sorted_ids, torch.arange(e_local, device=rows.device, dtype=sorted_ids.dtype),
                              right=True, out_int32=True)
    x = rows[order]
    h = apply_activation(grouped_mm(x, w_up, ends), activation, "concatenated")
    y = grouped_mm(h.to(w_down.dtype), w_down, ends)
    return torch.empty_like(y).index_copy(0, order, y)


def expert_parallel_experts(x: torch.Tensor, topk_ids: torch.Tensor, topk_weights: torch.Tensor,
                            w_up: torch.Tensor, w_down: torch.Tensor, num_experts: int,
                            activation: str = "swiglu", group: Optional[dist.ProcessGroup] = None) -> torch.Tensor:
    """One expert-parallel MoE experts step (see the module's docstring): x (T, H) this rank's tokens,
    topk_ids (T, k) global expert ids, topk_weights (T, k); w_up (E_local, H, N_up), w_down
    (E_local, I, H) this rank's experts. Returns (T, H) in x's dtype. Forward and backward."""
    if activation not in _ACTIVATIONS:
        raise ValueError(f"activation: must be one of {', '.join(_ACTIVATIONS)}; got {activation!r}")
    world = dist.get_world_size(group) if dist.is_initialized() else 1
    rank = dist.get_rank(group) if dist.is_initialized() else 0
    place = ExpertPlacement(num_experts, world, rank)
    if w_up.shape[0] != place.local or w_down.shape[0] != place.local:
        raise ValueError(f"w_up, w_down: must hold this rank's {place.local} experts (num_experts {num_experts} over "
                         f"{world} ranks); got {w_up.shape[0]} and {w_down.shape[0]}")
    if topk_ids.shape != topk_weights.shape or topk_ids.dim() != 2 or topk_ids.shape[0] != x.shape[0]:
        raise ValueError(f"topk_ids, topk_weights: must both be (T, k) with T = {x.shape[0]}; got "
                         f"{tuple(topk_ids.shape)} and {tuple(topk_weights.shape)}")
    tokens, k = topk_ids.shape
    flat_ids = topk_ids.reshape(-1).long()
    # Ids outside [0, num_experts) would be sent nowhere: clamp on the device (never read past) and
    # zero their weight, so such a choice adds nothing.
    valid = (flat_ids >= 0) & (flat_ids < num_experts)
    flat_ids = flat_ids.clamp(0, num_experts - 1)
    weights = topk_weights.reshape(-1) * valid

    sorted_ids, order = torch.sort(flat_ids, stable=True)  # by expert, hence by owning rank
    send_rows = x[torch.div(order, k, rounding_mode="floor")]
    if world == 1:
        y_sorted = local_experts_forward(send_rows, sorted_ids, w_up, w_down, activation)
    else:
        send_counts = _counts(place.owner(sorted_ids), world)
        recv_counts = torch.empty_like(send_counts)
        dist.all_to_all_single(recv_counts, send_counts, group=group)
        # The one host synchronisation of the step: all_to_all_single takes Python split sizes.
        send_splits, recv_splits = send_counts.tolist(), recv_counts.tolist()
        received = sum(recv_splits)
        recv_rows = all_to_all_single(x.new_empty(received, x.shape[1]), send_rows, recv_splits, send_splits,
                                      group=group)
        recv_ids = sorted_ids.new_empty(received)
        dist.all_to_all_single(recv_ids, sorted_ids.contiguous(), recv_splits, send_splits, group=group)
        y_recv = local_experts_forward(recv_rows, recv_ids - place.first, w_up, w_down, activation)
        y_sorted = all_to_all_single(y_recv.new_empty(tokens * k, y_recv.shape[1]), y_recv, send_splits,
                                     recv_splits, group=group)
    # Back to (token, choice) order, weighted, and summed over the k choices in a fixed order.
    y = torch.empty_like(y_sorted).index_copy(0, order, y_sorted)
    y = y * weights.to(y.dtype).unsqueeze(-1)
    return y.view(tokens, k, -1).sum(dim=1).to(x.dtype)


class ExpertParallelExperts(torch.nn.Module):
    """This rank's experts of an expert-parallel MoE layer: ``w_up`` (E_local, H, N_up) and ``w_down``
    (E_local, I, H), N_up = 2I for swiglu ([gate; up] halves). ``forward(x, topk_ids, topk_weights)``."""

    def __init__(self, num_experts: int, hidden: int, intermediate: int, activation: str = "swiglu",
                 group: Optional[dist.ProcessGroup] = None, dtype: torch.dtype = torch.bfloat16,
                 device: Optional[torch.device] = None):
        super().__init__()
        world = dist.get_world_size(group) if dist.is_initialized() else 1
        rank = dist.get_rank(group) if dist.is_initialized() else 0
        self.placement = ExpertPlacement(num_experts, world, rank)
        self.num_experts, self.activation, self.group = num_experts, activation, group
        n_up = 2 * intermediate if activation == "swiglu" else intermediate
        local = self.placement.local
        self.w_up = torch.nn.Parameter(torch.empty(local, hidden, n_up, dtype=dtype, device=device))
        self.w_down = torch.nn.Parameter(torch.empty(local, intermediate, hidden, dtype=dtype, device=device))
        torch.nn.init.normal_(self.w_up, std=hidden ** -0.5)
        torch.nn.init.normal_(self.w_down, std=intermediate ** -0.5)

    def forward(self, x: torch.Tensor, topk_ids: torch.Tensor, topk_weights: torch.Tensor) -> torch.Tensor:
        return expert_parallel_experts(x, topk_ids, topk_weights, self.w_up, self.w_down, self.num_experts,
                                       self.activation, self.group)
