# python/gemmops/torch/_library.py: torch.ops.gemmops.grouped_mm, the custom op torch.compile and
# torch.export see (opaque, with a fake kernel and its backward), and the eager autograd function
# SPDX-License-Identifier: Apache-2.0
from typing import Optional

import torch

from . import _backward, _forms
from ._forward import product


def _op_mm(x, y, offs, dtype):
    return torch.ops.gemmops.grouped_mm(x, y, offs, dtype)


@torch.library.custom_op("gemmops::grouped_mm", mutates_args=())
def grouped_mm_op(mat_a: torch.Tensor, mat_b: torch.Tensor, offs: Optional[torch.Tensor] = None,
                  out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """torch.nn.functional.grouped_mm's product (any of its four forms) on gemmops' operators."""
    return product(mat_a, mat_b, offs, out_dtype)


@grouped_mm_op.register_fake
def _fake(mat_a, mat_b, offs=None, out_dtype=None):
    form = _forms.form_of(mat_a, mat_b)
    return _forms.new_out(form, mat_a, mat_b, offs, _forms.check(form, mat_a, mat_b, offs, None, out_dtype))


def _setup_context(ctx, inputs, output):
    mat_a, mat_b, offs, _ = inputs
    ctx.save_for_backward(mat_a, mat_b, offs)


def _op_backward(ctx, grad):
    a, b, offs = ctx.saved_tensors
    da, db = _backward.grads(_forms.form_of(a, b), a, b, offs, grad, ctx.needs_input_grad[0],
                             ctx.needs_input_grad[1], _op_mm)
    return da, db, None, None


grouped_mm_op.register_autograd(_op_backward, setup_context=_setup_context)


class GroupedMMFunction(torch.autograd.Function):
    """The eager path: torch.autograd.Function costs a few microseconds a call where a custom op
    costs tens; both compute the same gradients."""

    @staticmethod
    def forward(ctx, mat_a, mat_b, offs, out_dtype):
        out = product(mat_a, mat_b, offs, out_dtype)  # checks the arguments before anything is saved
        ctx.save_for_backward(mat_a, mat_b, offs)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        a, b, offs = ctx.saved_tensors
        da, db = _backward.grads(_forms.form_of(a, b), a, b, offs, grad, ctx.needs_input_grad[0],
                                 ctx.needs_input_grad[1], product)
        return da, db, None, None
