# python/gemmops/torch/masked.py: the masked grouped mm of expert-parallel decode (DeepEP's low-latency
# layout): each expert's first count rows of a (G, MaxM, K) buffer, one launch, no host synchronisation
# SPDX-License-Identifier: Apache-2.0
import atexit
from typing import Dict, Optional

import torch

from .. import _gemmops as _core
from ._dispatch import PlanLaunch, no_operator
from ._forms import GroupedMMError

_plans: Dict[tuple, PlanLaunch] = {}
atexit.register(_plans.clear)  # plans hold C++ objects: gone before the extension is


def grouped_mm_masked(a: torch.Tensor, b: torch.Tensor, counts: torch.Tensor,
                      out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """out[g, :counts[g]] = a[g, :counts[g]] @ b[g]; a (G, MaxM, K), b (G, K, N), int32 counts (G,)
    on a's device (clamped to [0, MaxM] there; values outside are an error on the host). Returns
    (G, MaxM, N) with every row past a group's count zero. No autograd (a decode-time op)."""
    if a.dim() != 3 or b.dim() != 3 or counts.dim() != 1:
        raise GroupedMMError(f"grouped_mm_masked: a, b, counts must be (G, MaxM, K), (G, K, N), (G,); got "
                             f"{tuple(a.shape)}, {tuple(b.shape)}, {tuple(counts.shape)}")
    out_dtype = out_dtype or a.dtype
    out = torch.zeros(a.shape[0], a.shape[1], b.shape[2], dtype=out_dtype, device=a.device)
    if out.numel() == 0 or a.shape[2] == 0:
        return out
    key = (a.dtype, a.shape, a.stride(), b.dtype, b.shape, b.stride(), out_dtype, counts.dtype, counts.shape,
           a.get_device(), (a.data_ptr() | b.data_ptr()) & 15)
    launch = _plans.get(key)
    if launch is None:
        try:
            args = _core.GroupedGemmArguments(a, b, out, accumulator_type="float32", offsets=counts)
        except (ValueError, TypeError) as e:
            raise GroupedMMError(f"grouped_mm_masked: {e}") from e
        ops = _core.get_operators(args)
        if not ops:
            raise no_operator(args)
        launch = _plans[key] = PlanLaunch(_core.make_plan(args, operator=ops[0]), a.get_device())
    launch.run(a, b, out, counts)
    return out
