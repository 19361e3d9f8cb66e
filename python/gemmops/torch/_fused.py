# python/gemmops/torch/_fused.py: the M-grouped product with a fused epilogue op (activation, gated SwiGLU,
# per-row scale), planned once per layout like grouped_mm; None when no operator serves the op there
# SPDX-License-Identifier: Apache-2.0
import atexit
from typing import Dict, Optional

import torch

from .. import _gemmops as _core
from ._dispatch import PlanLaunch

_launches: Dict[tuple, Optional[PlanLaunch]] = {}
atexit.register(_launches.clear)  # plans hold C++ objects: gone before the extension is


def _key(a, b, offs, out_shape, activation, gate_layout, row_scale) -> tuple:
    return (a.dtype, a.shape, a.stride(), b.dtype, b.shape, b.stride(), offs.shape, out_shape, a.get_device(),
            activation, gate_layout, row_scale is not None, (a.data_ptr() | b.data_ptr()) & 15)


def _plan(a, b, offs, out, activation, gate_layout, row_scale) -> Optional[PlanLaunch]:
    epilogue = _core.EpilogueOps(activation=activation, gate_layout=gate_layout, row_scale=row_scale)
    try:
        args = _core.GroupedGemmArguments(a, b, out, accumulator_type="float32", offsets=offs, zero_tail=True,
                                          epilogue=epilogue)
    except (ValueError, TypeError):
        return None
    ops = _core.get_operators(args)
    if not ops:
        return None
    return PlanLaunch(_core.make_plan(args, operator=ops[0]), a.get_device())


def grouped_mm_epilogue(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor, activation: str = "none",
                        gate_layout: str = "concatenated",
                        row_scale: Optional[torch.Tensor] = None) -> Optional[torch.Tensor]:
    """out[rows of g] = epilogue(a[rows of g] @ b[g]): a (S, K), b (G, K, N), int32 offs (G,) of group
    ends; the activation (gated: out has N/2 columns) and the fp32 row scale (S,) fused into the
    store; rows past offs[-1] are zeros. No autograd. None when no operator fuses this op here (the
    caller then runs the unfused ops)."""
    n = b.shape[-1] // 2 if activation in ("swiglu", "swiglu_oss") else b.shape[-1]
    out_shape = (a.shape[0], n)
    key = _key(a, b, offs, out_shape, activation, gate_layout, row_scale)
    launch = _launches.get(key, False)
    out = torch.empty(out_shape, dtype=a.dtype, device=a.device)
    if launch is False:
        launch = _launches[key] = _plan(a, b, offs, out, activation, gate_layout, row_scale)
    if launch is None:
        return None
    if out.numel():
        launch.run(a, b, out, offs, row_scale)
    return out
