# python/gemmops/torch/_combine.py: each token's k expert rows summed (optionally weighted) in choice
# order by gemmops' gather-reduce kernel: no atomics, bits independent of the launch
# SPDX-License-Identifier: Apache-2.0
from typing import Optional

import torch

from .. import _gemmops as _core
from ._dispatch import _raw_stream


def pair_rows(order: torch.Tensor, tokens: int, k: int) -> torch.Tensor:
    """(T, k) int32: the sorted row of each (token, choice), the inverse of the sort's `order`."""
    rows = torch.empty_like(order)
    rows[order] = torch.arange(order.numel(), device=order.device, dtype=order.dtype)
    return rows.view(tokens, k).to(torch.int32)


def combine(rows: torch.Tensor, pair: torch.Tensor, scores: Optional[torch.Tensor] = None,
            row_limit: Optional[torch.Tensor] = None, out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """out[t] = sum over j of scores[t, j] * rows[pair[t, j]] (T, H), in fp32, rounded once to out_dtype
    (rows' dtype by default). Rows at or past row_limit[0] (a one-element int32 tensor, e.g. the
    grouped GEMM's offsets[-1:]) and negative rows add nothing."""
    if rows.stride(-1) != 1:
        rows = rows.contiguous()
    out = torch.empty((pair.shape[0], rows.shape[1]), dtype=out_dtype or rows.dtype, device=rows.device)
    if scores is not None:
        scores = scores.to(torch.float32).contiguous()
    stream = _raw_stream(rows.device.index) if rows.is_cuda else 0
    _core.gather_reduce(rows, pair.contiguous(), out, scores, row_limit, stream)
    return out
