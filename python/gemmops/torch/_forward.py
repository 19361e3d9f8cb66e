# python/gemmops/torch/_forward.py: grouped_mm without autograd: check, allocate out, run
# SPDX-License-Identifier: Apache-2.0
from typing import Optional

import torch

from . import _dispatch, _forms


def forward_checked(mat_a: torch.Tensor, mat_b: torch.Tensor, offs: Optional[torch.Tensor],
                    out_dtype: Optional[torch.dtype]) -> torch.Tensor:
    form = _forms.form_of(mat_a, mat_b)
    dtype = _forms.check(form, mat_a, mat_b, offs, None, out_dtype)
    return forward(form, mat_a, mat_b, offs, dtype)


def forward(form: str, mat_a: torch.Tensor, mat_b: torch.Tensor, offs: Optional[torch.Tensor],
            dtype: torch.dtype) -> torch.Tensor:
    """The product in `form` on valid operands; rows (3d2d: columns) past offs[-1] are zeros."""
    out = _forms.new_out(form, mat_a, mat_b, offs, dtype)
    if out.numel() == 0:
        return out
    # Nothing to sum, or (2d3d, 3d2d) no group: every element is a zero, and no kernel is needed.
    if _forms.contraction_is_empty(form, mat_a) or (form in ("2d3d", "3d2d") and offs.shape[0] == 0):
        return out.zero_()
    _dispatch.run(form, mat_a, mat_b, out, offs, zero_tail=True)
    return out
