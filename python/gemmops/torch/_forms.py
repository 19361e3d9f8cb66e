# python/gemmops/torch/_forms.py: the four forms of torch.nn.functional.grouped_mm, their rules and
# the output tensor each returns (shape and strides as torch makes them)
# SPDX-License-Identifier: Apache-2.0
"""Forms (mat_a x mat_b, offs):

    "2d3d"  A (TotalM, K) x B (G, K, N), offs along TotalM  -> out (TotalM, N)   gemmops grouped_m
    "2d2d"  A (M, TotalK) x B (TotalK, N), offs along TotalK -> out (G, M, N)     gemmops grouped_k
    "3d3d"  A (G, M, K) x B (G, K, N), no offs                -> out (G, M, N)     gemmops batched_gemm
    "3d2d"  A (G, M, K) x B (K, TotalN), offs along TotalN   -> out (M, TotalN)   gemmops grouped_n
"""

from typing import Optional, Tuple

import torch

_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
_ELEMENTS_PER_16_BYTES = {torch.bfloat16: 8, torch.float16: 8, torch.float32: 4}


class GroupedMMError(RuntimeError, ValueError):
    """A rule of grouped_mm broken: a RuntimeError as torch raises, and a ValueError as gemmops does."""


def _name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def form_of(mat_a: torch.Tensor, mat_b: torch.Tensor) -> str:
    if mat_a.dim() not in (2, 3):
        raise GroupedMMError(f"mat_a: must be 2d or 3d; got {mat_a.dim()}d")
    if mat_b.dim() not in (2, 3):
        raise GroupedMMError(f"mat_b: must be 2d or 3d; got {mat_b.dim()}d")
    return f"{mat_a.dim()}d{mat_b.dim()}d"


def check(form: str, mat_a: torch.Tensor, mat_b: torch.Tensor, offs: Optional[torch.Tensor],
          bias: Optional[torch.Tensor], out_dtype: Optional[torch.dtype]) -> torch.dtype:
    """Raises GroupedMMError naming the operand and the rule; returns the output dtype."""
    for t, role in ((mat_a, "mat_a"), (mat_b, "mat_b")):
        if t.dtype not in _DTYPES:
            raise GroupedMMError(f"{role}: dtype must be bfloat16, float16 or float32; got {_name(t.dtype)}")
    if mat_b.dtype != mat_a.dtype:
        raise GroupedMMError(f"mat_b: dtype must equal mat_a's ({_name(mat_a.dtype)}); got {_name(mat_b.dtype)}")
    if mat_b.device != mat_a.device:
        raise GroupedMMError(f"mat_b: must be on mat_a's device ({mat_a.device}); got {mat_b.device}")
    if bias is not None:
        raise GroupedMMError("bias: not supported (as in torch.nn.functional.grouped_mm); add it to the result")
    k_a = mat_a.shape[-1]
    k_b = mat_b.shape[0] if form == "2d2d" else mat_b.shape[-2]
    if k_a != k_b:
        what = "rows (TotalK)" if form == "2d2d" else "K (size of dim -2)"
        raise GroupedMMError(f"mat_b: {what} must equal mat_a's last dimension ({k_a}); got {k_b}")
    if form == "3d3d":
        if offs is not None:
            raise GroupedMMError("offs: must be None when both operands are 3d (a batched product)")
        if mat_b.shape[0] != mat_a.shape[0]:
            raise GroupedMMError(f"mat_b: batch size must equal mat_a's ({mat_a.shape[0]}); got {mat_b.shape[0]}")
    else:
        if offs is None:
            raise GroupedMMError(f"offs: required when an operand is 2d (form {form}); got None")
        if offs.dtype != torch.int32:
            raise GroupedMMError(f"offs: must be int32; got {_name(offs.dtype)}")
        if offs.dim() != 1:
            raise GroupedMMError(f"offs: must be 1d (G,); got shape {tuple(offs.shape)}")
        if offs.device != mat_a.device:
            raise GroupedMMError(f"offs: must be on mat_a's device ({mat_a.device}); got {offs.device}")
        groups = {"2d3d": mat_b.shape[0], "3d2d": mat_a.shape[0]}.get(form)
        if groups is not None and offs.shape[0] != groups:
            owner = "mat_b" if form == "2d3d" else "mat_a"
            raise GroupedMMError(f"offs: length must equal {owner}'s group count ({groups}); got {offs.shape[0]}")
    dtype = mat_a.dtype if out_dtype is None else out_dtype
    if dtype not in _DTYPES:
        raise GroupedMMError(f"out_dtype: must be bfloat16, float16 or float32; got {_name(dtype)}")
    return dtype


def out_shape(form: str, mat_a: torch.Tensor, mat_b: torch.Tensor, offs: Optional[torch.Tensor]) -> Tuple[int, ...]:
    if form == "2d3d":
        return (mat_a.shape[0], mat_b.shape[-1])
    if form == "2d2d":
        return (offs.shape[0], mat_a.shape[0], mat_b.shape[1])
    if form == "3d3d":
        return (mat_a.shape[0], mat_a.shape[1], mat_b.shape[-1])
    return (mat_a.shape[1], mat_b.shape[1])


def out_layout(form: str, mat_a: torch.Tensor, mat_b: torch.Tensor, offs: Optional[torch.Tensor],
               dtype: torch.dtype) -> Tuple[Tuple[int, ...], Tuple[int, ...]]:
    """(shape, strides) of the output torch's grouped_mm returns: row-major, rows padded to 16 bytes
    (TMA stores need 16-byte row strides)."""
    shape = out_shape(form, mat_a, mat_b, offs)
    align = _ELEMENTS_PER_16_BYTES[dtype]
    padded = (shape[-1] + align - 1) // align * align
    strides = (padded, 1) if len(shape) == 2 else (shape[1] * padded, padded, 1)
    return shape, strides


def new_out(form: str, mat_a: torch.Tensor, mat_b: torch.Tensor, offs: Optional[torch.Tensor],
            dtype: torch.dtype) -> torch.Tensor:
    """An uninitialised output in out_layout()."""
    shape, strides = out_layout(form, mat_a, mat_b, offs, dtype)
    return torch.empty_strided(shape, strides, dtype=dtype, device=mat_a.device)


def contraction_is_empty(form: str, mat_a: torch.Tensor) -> bool:
    """K = 0 (every form but 2d2d, whose K is split by offs): every element of out is a zero."""
    return form != "2d2d" and mat_a.shape[-1] == 0
