# python/gemmops/torch/router.py: gemmops.torch.router_topk, a MoE router's softmax and top-k in one
# kernel (a warp a token) and its backward, as torch custom ops with fake kernels
# SPDX-License-Identifier: Apache-2.0
"""``gemmops.torch.router_topk``: the experts each token goes to, and their weights.

    ids, weights = gemmops.torch.router_topk(logits, k, renormalize=True)

logits (T, E) bf16 / fp16 / fp32 (E <= 1024, k <= 32): p = softmax(logits) in fp32; ids (T, k) int32
= the k experts of largest p + selection_bias (fp32 (E,) or (T, E): moves the choice, never the
weights; a tie: the lower id), in that order; weights (T, k) fp32 = p at them, divided by their sum
with ``renormalize`` (Qwen3's norm_topk_prob; Mixtral's softmax over the top-k logits is the same).
Differentiable in the logits. One kernel forward and one backward on a CUDA device, no (T, E)
probabilities kept, no host synchronisation; GEMMOPS_ROUTING=torch takes torch's softmax and a stable
sort instead (the same choice and tie rule; for comparisons, or to step around a fault in the kernels).
"""
from typing import List, Optional, Tuple

import torch

from .. import _gemmops as _core
from ._dispatch import _raw_stream
from ._env import torch_routing_asked

__all__ = ["router_topk"]


def kernels_offered(device: torch.device) -> bool:
    """The kernels on the host always; on a CUDA device unless GEMMOPS_ROUTING=torch (read at each call)."""
    if device.type != "cuda":
        return True
    return not torch_routing_asked()


def _stream(t: torch.Tensor) -> int:
    return _raw_stream(t.device.index) if t.is_cuda else 0


def _launch(logits, k, renormalize, selection_bias):
    ids = torch.empty((logits.shape[0], k), dtype=torch.int32, device=logits.device)
    weights = torch.empty((logits.shape[0], k), dtype=torch.float32, device=logits.device)
    _core.router_topk(logits, k, renormalize, ids, weights, selection_bias, _stream(logits))
    return ids, weights


def _launch_backward(logits, ids, grad_weights, renormalize):
    grad_logits = torch.empty_like(logits, memory_format=torch.contiguous_format)
    _core.router_topk_backward(logits, ids, grad_weights.to(torch.float32).contiguous(), renormalize, grad_logits,
                               _stream(logits))
    return grad_logits


# Under torch.compile: opaque custom ops with fake kernels, so the graph keeps them.
@torch.library.custom_op("gemmops::router_topk", mutates_args=())
def _router_topk(logits: torch.Tensor, k: int, renormalize: bool,
                 selection_bias: Optional[torch.Tensor]) -> List[torch.Tensor]:
    return list(_launch(logits, k, renormalize, selection_bias))


@_router_topk.register_fake
def _router_topk_fake(logits, k, renormalize, selection_bias):
    return [logits.new_empty((logits.shape[0], k), dtype=torch.int32),
            logits.new_empty((logits.shape[0], k), dtype=torch.float32)]


@torch.library.custom_op("gemmops::router_topk_backward", mutates_args=())
def _router_topk_backward(logits: torch.Tensor, ids: torch.Tensor, grad_weights: torch.Tensor,
                          renormalize: bool) -> torch.Tensor:
    return _launch_backward(logits, ids, grad_weights, renormalize)


@_router_topk_backward.register_fake
def _router_topk_backward_fake(logits, ids, grad_weights, renormalize):
    return torch.empty_like(logits, memory_format=torch.contiguous_format)


def _setup_context(ctx, inputs, output):
    logits, _, renormalize, _ = inputs
    ctx.save_for_backward(logits, output[0])
    ctx.renormalize = renormalize


def _backward(ctx, grads):
    logits, ids = ctx.saved_tensors
    grad_weights = grads[1]
    if grad_weights is None:
        return None, None, None, None
    return _router_topk_backward(logits, ids, grad_weights, ctx.renormalize), None, None, None


_router_topk.register_autograd(_backward, setup_context=_setup_context)


class _RouterTopkFunction(torch.autograd.Function):
    """Eager: the same kernels through an autograd function, which costs a few microseconds of host
    time a call where a custom op costs tens (with the custom ops an H100 step ran 4.785 ms against
    4.586 with torch's router, though its device time was 0.11 ms less: the difference is host time)."""

    @staticmethod
    def forward(ctx, logits, k, renormalize, selection_bias):
        ids, weights = _launch(logits, k, renormalize, selection_bias)
        ctx.save_for_backward(logits, ids)
        ctx.renormalize = renormalize
        ctx.mark_non_differentiable(ids)
        return ids, weights

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_ids, grad_weights):
        if grad_weights is None:
            return None, None, None, None
        logits, ids = ctx.saved_tensors
        return _launch_backward(logits, ids, grad_weights, ctx.renormalize), None, None, None


def _by_torch(logits, k, renormalize, selection_bias):
    """The same choice and weights by torch's softmax and topk (differentiable by autograd)."""
    probs = torch.softmax(logits, dim=-1, dtype=torch.float32)
    key = probs if selection_bias is None else probs + selection_bias
    # (A stable sort, not topk: a tie goes to the lower id, as the kernels choose.)
    ids = torch.sort(key.detach(), dim=-1, descending=True, stable=True).indices[:, :k]
    weights = probs.gather(1, ids)
    if renormalize:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return ids.to(torch.int32), weights


def router_topk(logits: torch.Tensor, k: int, renormalize: bool = False,
                selection_bias: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """(ids (T, k) int32, weights (T, k) fp32) of the router's logits (see the module's docstring)."""
    if logits.dim() != 2:
        raise ValueError(f"logits: must be (T, E) (rank 2); got shape {tuple(logits.shape)}")
    if selection_bias is not None and selection_bias.dtype != torch.float32:
        raise ValueError(f"selection_bias: must be float32; got {selection_bias.dtype}")
    if not kernels_offered(logits.device):
        return _by_torch(logits, k, renormalize, selection_bias)
    if logits.stride(-1) != 1:
        logits = logits.contiguous()
    if torch.compiler.is_compiling():
        ids, weights = _router_topk(logits, k, renormalize, selection_bias)
    else:
        ids, weights = _RouterTopkFunction.apply(logits, k, renormalize, selection_bias)
    return ids, weights
