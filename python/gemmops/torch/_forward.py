# python/gemmops/torch/_forward.py: grouped_mm without autograd: each layout of the arguments is
# checked and resolved once (form, output layout, launch), then a call allocates out and launches
# SPDX-License-Identifier: Apache-2.0
import atexit
from typing import Dict, Optional

import torch

from . import _dispatch, _forms
from ._env import kernel_defines


class _Call:
    """What one layout of (mat_a, mat_b, offs, out_dtype) resolves to."""

    __slots__ = ("form", "dtype", "shape", "strides", "zeros", "launch")

    def __init__(self, mat_a, mat_b, offs, out_dtype):
        self.form = _forms.form_of(mat_a, mat_b)
        self.dtype = _forms.check(self.form, mat_a, mat_b, offs, None, out_dtype)
        self.shape, self.strides = _forms.out_layout(self.form, mat_a, mat_b, offs, self.dtype)
        # Nothing to sum, or (2d3d, 3d2d) no group: every element is a zero, no kernel is needed.
        self.zeros = _forms.contraction_is_empty(self.form, mat_a) or (
            self.form in ("2d3d", "3d2d") and offs.shape[0] == 0)
        self.launch = None  # made on the first call with data (a plan per layout)


_calls: Dict[tuple, _Call] = {}
# Launches hold C++ plans: drop them before the interpreter tears the extension down.
atexit.register(_calls.clear)


def _key(mat_a, mat_b, offs, out_dtype) -> tuple:
    # Everything the checks, the output and the plan depend on, the data's 16-byte alignment included
    # (and the kernel defines the plan's kernels are compiled with: bench_layer --ab-defines).
    key = (mat_a.dtype, mat_a.shape, mat_a.stride(), mat_b.dtype, mat_b.shape, mat_b.stride(), out_dtype,
           mat_a.get_device(), mat_b.get_device(), (mat_a.data_ptr() | mat_b.data_ptr()) & 15, kernel_defines())
    if offs is not None:
        key += (offs.dtype, offs.shape, offs.stride(), offs.get_device())
    return key


def product(mat_a: torch.Tensor, mat_b: torch.Tensor, offs: Optional[torch.Tensor],
            out_dtype: Optional[torch.dtype]) -> torch.Tensor:
    """grouped_mm's product on its operands (any form); rows (3d2d: columns) past offs[-1] are zeros.
    Raises GroupedMMError for arguments torch's grouped_mm refuses."""
    key = _key(mat_a, mat_b, offs, out_dtype)
    call = _calls.get(key)
    if call is None:
        call = _calls[key] = _Call(mat_a, mat_b, offs, out_dtype)
    out = torch.empty_strided(call.shape, call.strides, dtype=call.dtype, device=mat_a.device)
    if call.zeros:
        return out.zero_()
    if out.numel() == 0:
        return out
    if call.launch is None:
        call.launch = _dispatch.choose(call.form, mat_a, mat_b, out, offs)
    call.launch(mat_a, mat_b, out, offs)
    return out
