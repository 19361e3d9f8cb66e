# python/gemmops/torch/scaled.py: gemmops.torch.scaled_grouped_mm, torch._scaled_grouped_mm's 2d x 3d
# (M-grouped) form with rowwise scales on gemmops' operators
# SPDX-License-Identifier: Apache-2.0
from typing import Optional

import torch

from .. import _gemmops as _core
from ._dispatch import _raw_stream

_FP8 = (torch.float8_e4m3fn,)


def scaled_grouped_mm(mat_a: torch.Tensor, mat_b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
                      offs: Optional[torch.Tensor] = None, bias: Optional[torch.Tensor] = None,
                      scale_result: Optional[torch.Tensor] = None, out_dtype: Optional[torch.dtype] = None,
                      use_fast_accum: bool = False) -> torch.Tensor:
    """torch._scaled_grouped_mm where the two overlap: mat_a (TotalM, K) and mat_b (G, K, N) e4m3, scale_a
    (TotalM,) and scale_b (G, N) (or (G * N,)) fp32 rowwise scales, int32 offs (G,) of group ends, bf16
    out: out[rows of g] = (mat_a[rows] * scale_a[rows, None]) @ (mat_b[g] * scale_b[g][None, :]), rows
    past offs[-1] zeros. Each 128-K block is summed in fp32 (use_fast_accum changes nothing). On CUDA
    the sm90 fp8 main loop serves it; host tensors run on the CPU operators. Other forms, a bias or a
    result scale are refused naming the argument. No autograd."""
    if mat_a.dim() != 2 or mat_b.dim() != 3 or offs is None:
        raise ValueError("mat_a, mat_b, offs: gemmops.torch.scaled_grouped_mm serves the 2d x 3d form with offs "
                         f"(M-grouped); got mat_a {tuple(mat_a.shape)}, mat_b {tuple(mat_b.shape)}, offs "
                         f"{None if offs is None else tuple(offs.shape)}")
    if bias is not None or scale_result is not None:
        raise ValueError(f"{'bias' if bias is not None else 'scale_result'}: not served by "
                         "gemmops.torch.scaled_grouped_mm")
    if mat_a.dtype not in _FP8 or mat_b.dtype != mat_a.dtype:
        raise ValueError(f"mat_a, mat_b: must both be float8_e4m3fn; got {mat_a.dtype} and {mat_b.dtype}")
    out_dtype = out_dtype or torch.bfloat16
    if out_dtype != torch.bfloat16:
        raise ValueError(f"out_dtype: gemmops.torch.scaled_grouped_mm writes bfloat16; got {out_dtype}")
    groups, n = mat_b.shape[0], mat_b.shape[-1]
    if scale_a.numel() != mat_a.shape[0] or scale_b.numel() != groups * n:
        raise ValueError(f"scale_a, scale_b: rowwise scales must have TotalM = {mat_a.shape[0]} and G * N = "
                         f"{groups * n} elements; got {tuple(scale_a.shape)} and {tuple(scale_b.shape)}")
    out = torch.empty((mat_a.shape[0], n), dtype=out_dtype, device=mat_a.device)
    args = _core.GroupedGemmArguments(
        mat_a, mat_b, out, accumulator_type="float32", offsets=offs, zero_tail=True,
        a_scales=_core.OperandScales(scale_a.reshape(-1), "row"),
        b_scales=_core.OperandScales(scale_b.reshape(groups, n), "row"))
    ops = _core.get_operators(args)
    if not ops:
        reasons = "; ".join(f"{op.name}: {status}" for op, status in list(_core.get_rejections(args))[:3])
        raise NotImplementedError(f"gemmops.torch.scaled_grouped_mm: no operator serves these arguments here ({reasons})")
    if out.numel():
        plan = _core.make_plan(args, operator=ops[0])
        stream = _raw_stream(mat_a.device.index) if mat_a.is_cuda else 0
        ws = torch.empty(plan.workspace_size, dtype=torch.uint8, device=out.device) if plan.workspace_size else None
        plan.run(args, stream, 0 if ws is None else ws.data_ptr(), plan.workspace_size)
    return out
