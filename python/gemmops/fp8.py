# python/gemmops/fp8.py: fp8 quantisation of numpy arrays and torch tensors, CPU or CUDA (allocation
# only; the work is gemmops.quantize_fp8 in the C++ core)
# SPDX-License-Identifier: Apache-2.0
"""Quantise bf16/fp32 arrays into e4m3 operands with fp32 scales (docs/fp8.md).

    q, scales = gemmops.fp8.quantize(x)                                  # A: 1x128 per token group
    qb_t, b_scales = gemmops.fp8.quantize(w.T, "block_128x128")          # B (K, N) along K: its transpose
    args = gemmops.GemmArguments(q, qb_t.T, out, a_scales=scales, b_scales=b_scales)

numpy arrays need ml_dtypes for the e4m3 result. A CUDA torch tensor gives CUDA q and scales, quantised
on torch's current stream without synchronising (bit for bit the host's result; a block holding a NaN
or an infinity gets a NaN scale and NaN codes, where the host raises ValueError).
"""

from ._gemmops import OperandScales, quantize_fp8, scale_shape

__all__ = ["quantize", "allocate_scales"]


def _is_torch(x):
    return type(x).__module__.startswith("torch")


def allocate_scales(shape, layout="k_major", like=None):
    """Zeroed fp32 scales of `shape` in `layout`: mn_major puts dimension -2 contiguous with its
    leading dimension padded to 4 (16 bytes), DeepGEMM's TMA-aligned form."""
    shape = tuple(shape)
    if layout == "mn_major" and len(shape) >= 2:
        mn, kb = shape[-2], shape[-1]
        ld = (mn + 3) // 4 * 4
        storage = _zeros(shape[:-2] + (kb, ld), like)
        view = storage[..., :mn]
        return view.transpose(-1, -2) if _is_torch(view) else view.swapaxes(-1, -2)
    return _zeros(shape, like)


def _zeros(shape, like):
    if like is not None and _is_torch(like):
        import torch

        return torch.zeros(shape, dtype=torch.float32, device=like.device)
    import numpy as np

    return np.zeros(shape, dtype=np.float32)


def quantize(x, granularity="block_1x128", layout="k_major"):
    """(q, OperandScales): x (R, C) or (L, R, C) quantised in blocks along C (see quantize_fp8), on
    x's device."""
    stacked = len(x.shape) == 3
    shape = scale_shape(granularity, x.shape[-2], x.shape[-1], x.shape[0] if stacked else None)
    block = granularity in ("block_1x128", "block_128x128")
    scales = allocate_scales(shape, layout if block else "k_major", like=x)
    if _is_torch(x):
        import torch

        q = torch.empty(tuple(x.shape), dtype=torch.float8_e4m3fn, device=x.device)
    else:
        import ml_dtypes
        import numpy as np

        q = np.empty(x.shape, dtype=ml_dtypes.float8_e4m3fn)
    result = OperandScales(scales, granularity, layout if block else "k_major")
    quantize_fp8(x, q, result, _stream_of(x))
    return q, result


def _stream_of(x):
    """torch's current stream on x's device as an int for a CUDA tensor, else 0."""
    if _is_torch(x) and x.is_cuda:
        import torch

        return torch.cuda.current_stream(x.device).cuda_stream
    return 0
