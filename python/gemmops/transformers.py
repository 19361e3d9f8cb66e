# python/gemmops/transformers.py: experts_implementation="gemmops" for Hugging Face transformers MoE models
# SPDX-License-Identifier: Apache-2.0
"""Hugging Face transformers integration: MoE experts through ``gemmops.torch.grouped_mm``.

    import gemmops.transformers   # registers experts_implementation="gemmops"
    model = AutoModelForCausalLM.from_pretrained(name, experts_implementation="gemmops")
    model.set_experts_implementation("gemmops")   # or switch a loaded model

transformers (5.x) picks an experts module's forward by name from its ``ExpertsInterface``
registry when the module's class is decorated with ``@use_experts_implementation`` (Mixtral,
Qwen3-MoE, DeepSeek-V3, GPT-OSS, OLMoE, ...); a model without the decorator keeps its own loop
whatever the name says. Importing this module registers ``gemmops_experts_forward`` under
``"gemmops"``; it computes what transformers' ``"grouped_mm"`` does, with every grouped GEMM on
gemmops. ``import gemmops`` never imports transformers: this module is imported on demand.
"""

import torch

try:
    from transformers.integrations.moe import ExpertsInterface
except ImportError as e:  # transformers missing, or a 4.x without the experts registry
    raise ImportError(
        "gemmops.transformers needs transformers 5.x (transformers.integrations.moe.ExpertsInterface): "
        f"{e}") from e

from . import torch as gemmops_torch

__all__ = ["EXPERTS_IMPLEMENTATION", "gemmops_experts_forward", "register"]

EXPERTS_IMPLEMENTATION = "gemmops"


def _grouped_linear(rows: torch.Tensor, weight: torch.Tensor, offsets: torch.Tensor,
                    bias_rows, is_transposed: bool) -> torch.Tensor:
    """rows (S,K) sorted by expert times each expert's weight, plus its bias gathered per row.
    weight is (E,N,K) (nn.Linear's layout) unless is_transposed, then (E,K,N)."""
    b = weight if is_transposed else weight.transpose(-2, -1)  # a view: gemmops takes either major
    # Autocast may hand fp32 activations to bf16 experts; grouped GEMMs take one input dtype.
    out = gemmops_torch.grouped_mm(rows.to(b.dtype), b, offsets)
    return out if bias_rows is None else out + bias_rows


def gemmops_experts_forward(self: torch.nn.Module, hidden_states: torch.Tensor,
                            top_k_index: torch.Tensor, top_k_weights: torch.Tensor) -> torch.Tensor:
    """transformers' grouped experts forward on gemmops: tokens (T,H), top_k_index and top_k_weights
    (T,k) -> (T,H). ``self`` is an experts module decorated by ``@use_experts_implementation``
    (it has ``num_experts``, ``has_gate``, ``has_bias``, ``is_transposed``, ``_apply_gate``)."""
    num_tokens, hidden_dim = hidden_states.shape
    num_top_k = top_k_index.shape[-1]
    num_experts = self.num_experts

    # Each (token, choice) pair becomes one row, sorted by expert so that each expert's rows are a
    # contiguous group. Ids >= num_experts (expert-parallel sentinels for non-local experts) sort last.
    expert_ids, order = torch.sort(top_k_index.reshape(-1))
    rows = hidden_states[order // num_top_k]
    row_weights = top_k_weights.reshape(-1)[order]
    # offsets[e] = number of rows with an id <= e: the groups' ends, sentinels past offsets[-1].
    # searchsorted is exact on integers, needs no host sync and is capturable in a CUDA graph.
    expert_range = torch.arange(num_experts, device=expert_ids.device, dtype=expert_ids.dtype)
    offsets = torch.searchsorted(expert_ids, expert_range, right=True, out_int32=True)

    # Sentinel rows contribute nothing: zero them on the way in (so their gradient is zero too) and
    # after each GEMM (whose rows past offsets[-1] need not be written, and got a bias).
    sentinel = (expert_ids >= num_experts).unsqueeze(-1)
    expert_ids = expert_ids.clamp(max=num_experts - 1)  # keeps the bias gathers in range
    rows = rows.masked_fill(sentinel, 0.0)

    # Gated experts hold [gate; up] (or their interleaving) in one weight, split by _apply_gate.
    up = "gate_up_proj" if self.has_gate else "up_proj"
    up_bias_rows = getattr(self, up + "_bias")[expert_ids] if self.has_bias else None
    down_bias_rows = self.down_proj_bias[expert_ids] if self.has_bias else None

    projected = _grouped_linear(rows, getattr(self, up), offsets, up_bias_rows, self.is_transposed)
    projected = projected.masked_fill(sentinel, 0.0)
    activated = self._apply_gate(projected) if self.has_gate else self.act_fn(projected)
    projected = _grouped_linear(activated, self.down_proj, offsets, down_bias_rows, self.is_transposed)
    weighted = projected.masked_fill(sentinel, 0.0) * row_weights.unsqueeze(-1)

    # Back to (token, choice) order, then a sum over the k choices: deterministic, unlike index_add_
    # with its atomics, and the order of the sum is the same whatever the routing.
    unsorted = torch.empty_like(weighted).index_copy(0, order, weighted)
    final = unsorted.view(num_tokens, num_top_k, hidden_dim).sum(dim=1)
    return final.to(hidden_states.dtype)


def register(name: str = EXPERTS_IMPLEMENTATION) -> None:
    """Registers ``gemmops_experts_forward`` under ``name`` for every transformers model (idempotent)."""
    ExpertsInterface.register(name, gemmops_experts_forward)


register()
