# python/gemmops/torch/_backward.py: the gradients of every grouped_mm form, each written in the
# layout of its input where a form of the product allows it (a weight stored (G, N, K) and used as
# its transposed view gets its gradient in (G, N, K) order: autograd then copies nothing)
# SPDX-License-Identifier: Apache-2.0
from typing import Callable, Optional, Tuple

import torch

Mm = Callable[[torch.Tensor, torch.Tensor, Optional[torch.Tensor], torch.dtype], torch.Tensor]


def transposed(t: torch.Tensor) -> bool:
    """Column-major in its last two dimensions: its rows are contiguous and its columns are not."""
    return t.stride(-2) == 1 and t.stride(-1) != 1


def _t(t: torch.Tensor) -> torch.Tensor:
    return t.transpose(-2, -1)


def _row_major_as(result: torch.Tensor, want_transposed: bool) -> torch.Tensor:
    """A row-major product in the major its input had (a copy when the product could not give it)."""
    return _t(_t(result).contiguous()) if want_transposed else result


def _column_major_as(result: torch.Tensor, want_transposed: bool) -> torch.Tensor:
    """A column-major product (a transposed view) in the major its input had."""
    return result if want_transposed else result.contiguous()


def grads(form: str, a: torch.Tensor, b: torch.Tensor, offs: Optional[torch.Tensor], grad: torch.Tensor,
          need_a: bool, need_b: bool, mm: Mm) -> Tuple[Optional[torch.Tensor], Optional[torch.Tensor]]:
    """(d mat_a, d mat_b) for d out = `grad`; `mm(x, y, offs, dtype)` computes a product of any form."""
    if grad.dtype != a.dtype:
        grad = grad.to(a.dtype)
    da = db = None
    if form == "2d3d":  # a (TotalM, K), b (G, K, N), grad (TotalM, N)
        if need_a:  # 2d3d; rows past offs[-1] are zeros
            da = _row_major_as(mm(grad, _t(b), offs, a.dtype), transposed(a))
        if need_b:  # 2d2d; db^T = grad^T a when b is a transposed (G, N, K) weight
            db = _t(mm(_t(grad), a, offs, b.dtype)) if transposed(b) else mm(_t(a), grad, offs, b.dtype)
    elif form == "2d2d":  # a (M, TotalK), b (TotalK, N), grad (G, M, N)
        if need_a:  # 2d3d: da^T (TotalK, M), a group's rows b_g grad_g^T; columns past offs[-1] zero
            da = _column_major_as(_t(mm(b, _t(grad), offs, a.dtype)), transposed(a))
        if need_b:  # 2d3d: db (TotalK, N), a group's rows a_g^T grad_g
            db = _row_major_as(mm(_t(a), grad, offs, b.dtype), transposed(b))
    elif form == "3d3d":  # a (G, M, K), b (G, K, N), grad (G, M, N)
        if need_a:
            da = _t(mm(b, _t(grad), None, a.dtype)) if transposed(a) else mm(grad, _t(b), None, a.dtype)
        if need_b:
            db = _t(mm(_t(grad), a, None, b.dtype)) if transposed(b) else mm(_t(a), grad, None, b.dtype)
    else:  # "3d2d": a (G, M, K), b (K, TotalN), grad (M, TotalN)
        if need_a:  # 2d2d
            da = _t(mm(b, _t(grad), offs, a.dtype)) if transposed(a) else mm(grad, _t(b), offs, a.dtype)
        if need_b:  # 2d3d: db^T (TotalN, K), a group's rows grad_g^T a_g; columns past offs[-1] zero
            db = _column_major_as(_t(mm(_t(grad), a, offs, b.dtype)), transposed(b))
    return da, db
