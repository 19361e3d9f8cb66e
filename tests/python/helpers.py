# tests/python/helpers.py: numpy problems and float64 references for the Python tests
# SPDX-License-Identifier: Apache-2.0
import numpy as np


def offsets_of(sizes):
    return np.cumsum(np.asarray(sizes, dtype=np.int64)).astype(np.int32)


def starts_ends(offsets):
    ends = [int(e) for e in offsets]
    return list(zip([0] + ends[:-1], ends))


def ref_grouped_m(A, B, offsets, total_rows):
    """float64 out (TotalM,N) of the M-grouped form; rows past offsets[-1] stay NaN."""
    out = np.full((total_rows, B.shape[-1]), np.nan)
    for g, (s, e) in enumerate(starts_ends(offsets)):
        out[s:e] = A[s:e].astype(np.float64) @ B[g].astype(np.float64)
    return out


def ref_grouped_k(A, B, offsets):
    """float64 out (G,M,N) of the K-grouped form; empty groups are zero."""
    out = np.zeros((len(offsets), A.shape[0], B.shape[-1]))
    for g, (s, e) in enumerate(starts_ends(offsets)):
        out[g] = A[:, s:e].astype(np.float64) @ B[s:e].astype(np.float64)
    return out


def ref_grouped_n(A, B, offsets):
    """float64 out (M,TotalN) of the N-grouped form; columns past offsets[-1] stay NaN."""
    out = np.full((A.shape[1], B.shape[-1]), np.nan)
    for g, (s, e) in enumerate(starts_ends(offsets)):
        out[:, s:e] = A[g].astype(np.float64) @ B[:, s:e].astype(np.float64)
    return out


def rand(rng, shape, dtype):
    # Small integers scaled by 1/8 are exact in fp16/bf16, so only accumulation order differs.
    return (rng.integers(-4, 5, size=shape) / 8.0).astype(dtype)
