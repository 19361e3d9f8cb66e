# python/gemmops/torch.py: torch.ops.gemmops.grouped_mm, a custom op with a fake kernel and autograd
# SPDX-License-Identifier: Apache-2.0
"""PyTorch integration: ``torch.ops.gemmops.grouped_mm`` (M-grouped, ``torch._grouped_mm`` semantics).

    import gemmops.torch
    out = gemmops.torch.grouped_mm(A, B, offsets)   # A (TotalM,K), B (G,K,N), offsets int32 (G,)

Registered through ``torch.library`` with a fake (meta) kernel, so ``torch.compile(fullgraph=True)``
and CUDA graph capture see an opaque op; autograd computes dA with the same op on B's transposed view
and dB with ``gemmops::grouped_mm_k`` (the K-grouped form). CPU tensors run on the CPU operators.
"""

from typing import Dict, Optional

import torch

from . import _gemmops as _core

__all__ = ["grouped_mm", "grouped_mm_k"]

# An artifact serves every problem size with the same dtypes and layouts, so that is the key.
_artifacts: Dict[tuple, _core.Artifact] = {}


def _layout(t: torch.Tensor) -> tuple:
    return (t.dtype, t.dim(), tuple(s == 1 for s in t.stride()))


def _operator_for(args: _core.Arguments) -> Optional[_core.Operator]:
    ops = _core.get_operators(args)
    return ops[0] if ops else None


def _no_operator(args: _core.Arguments) -> ValueError:
    reasons = "; ".join(f"{op.name if op else 'target'}: {status.error}"
                        for op, status in _core.get_rejections(args)[:4])
    return ValueError(f"gemmops: no operator serves {args!r}; first reasons: {reasons}")


def _launch(A: torch.Tensor, B: torch.Tensor, out: torch.Tensor, offsets: torch.Tensor) -> None:
    """Runs the best operator for these operands on torch's current stream (no GEMM logic here)."""
    args = _core.GroupedGemmArguments(A, B, out, accumulator_type="float32", offsets=offsets)
    op = _operator_for(args)
    if op is None:
        # Views such as B's transpose or a broadcast gradient may have a layout no operator serves;
        # contiguous copies have the layout every provider does.
        retry = _core.GroupedGemmArguments(A.contiguous(), B.contiguous(), out,
                                           accumulator_type="float32", offsets=offsets)
        op = _operator_for(retry)
        if op is None:
            raise _no_operator(args)
        args = retry
    key = (op.name, _layout(args.A), _layout(args.B), _layout(args.out))
    artifact = _artifacts.get(key)
    if artifact is None:
        artifact = _artifacts[key] = op.compile(args)
    op.run(args, compiled_artifact=artifact)


@torch.library.custom_op("gemmops::grouped_mm", mutates_args=())
def grouped_mm(A: torch.Tensor, B: torch.Tensor, offsets: torch.Tensor,
               out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """out[r] = A[r] @ B[g] for rows r of group g = [offsets[g-1], offsets[g]); rows at or past
    offsets[-1] are zero. A (TotalM,K), B (G,K,N), offsets int32 (G,) on A's device."""
    # Zeros, not empty: the rows past offsets[-1] are defined, and reading offsets[-1] on the host
    # would synchronise (and break graph capture).
    out = torch.zeros((A.shape[0], B.shape[-1]), dtype=out_dtype or A.dtype, device=A.device)
    if out.numel() > 0 and A.shape[-1] > 0 and offsets.numel() > 0:
        _launch(A, B, out, offsets)
    return out


@grouped_mm.register_fake
def _grouped_mm_fake(A, B, offsets, out_dtype=None):
    return A.new_empty((A.shape[0], B.shape[-1]), dtype=out_dtype or A.dtype)


@torch.library.custom_op("gemmops::grouped_mm_k", mutates_args=())
def grouped_mm_k(A: torch.Tensor, B: torch.Tensor, offsets: torch.Tensor,
                 out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """out[g] = A[:, k-range of g] @ B[k-range of g, :] (weight gradients); empty groups are zero.
    A (M,TotalK), B (TotalK,N), offsets int32 (G,) along TotalK."""
    shape = (offsets.shape[0], A.shape[0], B.shape[-1])
    dtype = out_dtype or A.dtype
    if A.shape[-1] == 0 or 0 in shape:
        return torch.zeros(shape, dtype=dtype, device=A.device)
    out = torch.empty(shape, dtype=dtype, device=A.device)  # the K-grouped form writes every group
    _launch(A, B, out, offsets)
    return out


@grouped_mm_k.register_fake
def _grouped_mm_k_fake(A, B, offsets, out_dtype=None):
    return A.new_empty((offsets.shape[0], A.shape[0], B.shape[-1]), dtype=out_dtype or A.dtype)


def _setup_context(ctx, inputs, output):
    A, B, offsets, _ = inputs
    ctx.save_for_backward(A, B, offsets)


def _backward(ctx, grad):
    A, B, offsets = ctx.saved_tensors
    grad = grad.to(A.dtype)
    dA = dB = None
    if ctx.needs_input_grad[0]:
        # dA_g = dOut_g @ B_g^T: B's transpose is a view (MN-major), no copy.
        dA = grouped_mm(grad, B.transpose(-2, -1), offsets, out_dtype=A.dtype)
    if ctx.needs_input_grad[1]:
        # dB_g = A_g^T @ dOut_g: the K-grouped form with A^T (K,TotalM) and dOut (TotalM,N).
        dB = grouped_mm_k(A.transpose(0, 1), grad, offsets, out_dtype=B.dtype)
    return dA, dB, None, None


grouped_mm.register_autograd(_backward, setup_context=_setup_context)
