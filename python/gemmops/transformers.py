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
    from transformers.integrations import moe as _moe
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


# The activation modules moe_experts fuses, by class name (transformers' own and torch's).
_ACTIVATIONS = {"SiLU": "silu", "SiLUActivation": "silu", "GELUTanh": "gelu_tanh", "PytorchGELUTanh": "gelu_tanh",
                "ReLUSquaredActivation": "relu_squared"}


def _gate_is_clamped_swiglu(self: torch.nn.Module) -> bool:
    """Whether the module's own gate computes gpt-oss's clamped SwiGLU on interleaved [gate, up] pairs
    with the defaults moe_experts uses (alpha 1.702, limit 7): probed once per class and constants,
    on values that cross the clamps, against gemmops.torch's meaning of "swiglu_oss"."""
    key = (type(self), getattr(self, "alpha", None), getattr(self, "limit", None))
    if key not in _CLAMPED_SWIGLU:
        probe = torch.linspace(-9.0, 9.0, 48, dtype=torch.float64).view(3, 16)
        try:
            with torch.no_grad():
                got = self._apply_gate(probe)
            want = gemmops_torch.moe.apply_activation(probe, "swiglu_oss", "interleaved")
            _CLAMPED_SWIGLU[key] = got.shape == want.shape and torch.allclose(got, want, rtol=1e-12, atol=1e-12)
        except Exception:  # noqa: BLE001: a gate of another shape or kind is simply not this one
            _CLAMPED_SWIGLU[key] = False
    return _CLAMPED_SWIGLU[key]


_CLAMPED_SWIGLU = {}


def _fused_activation(self: torch.nn.Module):
    """(moe_experts' activation, gate layout) for this experts module, or None where the layer is one it
    does not compute as the module would (a post-expert norm, a model's own gate, other activations;
    biases only with gpt-oss's clamped SwiGLU)."""
    if getattr(self, "has_post_expert_norm", False):
        return None
    if getattr(self, "has_gate", False) and not getattr(self, "is_concatenated", True) and \
            _gate_is_clamped_swiglu(self):
        return "swiglu_oss", "interleaved"  # gpt-oss, biases and all
    if getattr(self, "has_bias", True):
        return None
    act = _ACTIVATIONS.get(type(getattr(self, "act_fn", None)).__name__)
    if act is None or not self.has_gate:
        return None if act is None else (act, "concatenated")
    # The default gate: chunk into [gate | up], act(gate) * up (transformers' _default_apply_gate).
    gate = getattr(type(self), "_apply_gate", None)
    default = getattr(_moe, "_default_apply_gate", None)
    return ("swiglu", "concatenated") if act == "silu" and default is not None and gate is default else None


def _moe_layer(self: torch.nn.Module, activation, hidden_states: torch.Tensor, top_k_index: torch.Tensor,
               top_k_weights: torch.Tensor) -> torch.Tensor:
    """The experts as gemmops.torch.moe_experts: six grouped GEMMs a training step, nothing recomputed."""
    activation, gate_layout = activation
    up_name = "gate_up_proj" if self.has_gate else "up_proj"
    up = getattr(self, up_name)
    # moe_experts takes (E, H, N) and (E, I, H): views of nn.Linear-style (E, N, H) and (E, H, I) weights.
    w_up = up if self.is_transposed else up.transpose(-2, -1)
    w_down = self.down_proj if self.is_transposed else self.down_proj.transpose(-2, -1)
    x = hidden_states.to(w_up.dtype)  # autocast may hand fp32 activations to bf16 experts
    biases = {}
    if getattr(self, "has_bias", False):
        biases = dict(b_gate_up=getattr(self, up_name + "_bias"), b_down=self.down_proj_bias)
    out = gemmops_torch.moe_experts(x, top_k_index, top_k_weights, w_up, w_down, activation, gate_layout, **biases)
    return out.to(hidden_states.dtype)


def gemmops_experts_forward(self: torch.nn.Module, hidden_states: torch.Tensor,
                            top_k_index: torch.Tensor, top_k_weights: torch.Tensor) -> torch.Tensor:
    """transformers' grouped experts forward on gemmops: tokens (T,H), top_k_index and top_k_weights
    (T,k) -> (T,H). ``self`` is an experts module decorated by ``@use_experts_implementation``
    (it has ``num_experts``, ``has_gate``, ``has_bias``, ``is_transposed``, ``_apply_gate``). Layers
    moe_experts computes (SwiGLU with the default gate, or a plain SiLU / GELU-tanh / ReLU² without
    biases, or gpt-oss's clamped SwiGLU with its biases) run as it; the others as grouped GEMMs around
    the module's own ops."""
    activation = _fused_activation(self)
    if activation is not None:
        return _moe_layer(self, activation, hidden_states, top_k_index, top_k_weights)
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
