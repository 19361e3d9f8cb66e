# python/gemmops/torch/__init__.py: gemmops for PyTorch: a drop-in torch.nn.functional.grouped_mm
# SPDX-License-Identifier: Apache-2.0
"""PyTorch integration: ``gemmops.torch.grouped_mm``, a drop-in for ``torch.nn.functional.grouped_mm``.

    import gemmops.torch
    out = gemmops.torch.grouped_mm(x, w.transpose(-2, -1), offs=offs)   # 2d x 3d: MoE experts
    gemmops.torch.patch()   # or route torch's own grouped_mm (and models that call it) here

Same signature and semantics as torch's, in its four forms (2d x 3d, 2d x 2d, 3d x 3d, 3d x 2d),
forward and backward, bf16 / fp16 / fp32 (out_dtype may also be float32 for 16-bit inputs), any
strides, int32 offsets on the device, never a host synchronisation (CUDA-graph safe). Rows (3d x 2d:
columns) past offs[-1] are zeros. Gradients come back in their inputs' layouts. Eager calls run a
plan made once per layout; under torch.compile the call is the opaque op
``torch.ops.gemmops.grouped_mm`` with a fake kernel and its backward.
"""

from typing import Optional

import torch

from ._forms import GroupedMMError, check, form_of
from ._forward import product
from ._library import GroupedMMFunction, grouped_mm_op
from ._patch import patch

__all__ = ["GroupedMMError", "grouped_mm", "grouped_mm_dgated", "grouped_mm_k", "grouped_mm_masked",
           "grouped_mm_with_pre_activation", "moe_experts", "patch", "router_topk", "scaled_grouped_mm"]


def grouped_mm(mat_a: torch.Tensor, mat_b: torch.Tensor, offs: Optional[torch.Tensor] = None,
               bias: Optional[torch.Tensor] = None, out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """torch.nn.functional.grouped_mm on gemmops' operators (see the module's docstring)."""
    if bias is not None or torch.compiler.is_compiling():
        check(form_of(mat_a, mat_b), mat_a, mat_b, offs, bias, out_dtype)  # refuses bias, by name
        return grouped_mm_op(mat_a, mat_b, offs, out_dtype)
    # Checks come from a cache of the arguments' layouts, as does everything else of the call.
    if torch.is_grad_enabled() and (mat_a.requires_grad or mat_b.requires_grad):
        return GroupedMMFunction.apply(mat_a, mat_b, offs, out_dtype)
    return product(mat_a, mat_b, offs, out_dtype)


def grouped_mm_k(A: torch.Tensor, B: torch.Tensor, offsets: torch.Tensor,
                 out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """The 2d x 2d form (weight gradients): out[g] = A[:, k-range of g] @ B[k-range of g, :]."""
    return grouped_mm(A, B, offsets, out_dtype=out_dtype)


from ._fused import grouped_mm_dgated, grouped_mm_with_pre_activation  # noqa: E402
from .masked import grouped_mm_masked  # noqa: E402
from .scaled import scaled_grouped_mm  # noqa: E402
from .moe import moe_experts  # noqa: E402  (moe uses grouped_mm above)
from .router import router_topk  # noqa: E402
