# tests/python/test_gather_reduce_host.py: gemmops.gather_reduce on host numpy arrays (the binding,
# the contract's sums, sentinels, the row limit, errors naming the operand), without torch
# SPDX-License-Identifier: Apache-2.0
import numpy as np
import pytest

import gemmops


def problem(S=30, T=12, k=3, H=16, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((S, H)).astype(dtype)
    pair = rng.integers(0, S, (T, k)).astype(np.int32)
    pair[0, 1], pair[1, 0], pair[2, 2] = -1, S, S + 7  # sentinels
    scores = rng.random((T, k)).astype(np.float32)
    return rows, pair, scores


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_weighted_sums_in_choice_order(dtype):
    rows, pair, scores = problem(dtype=dtype)
    out = np.full((pair.shape[0], rows.shape[1]), np.nan, dtype=np.float32)
    limit = np.array([20], dtype=np.int32)
    gemmops.gather_reduce(rows, pair, out, scores, limit)
    want = np.zeros(out.shape)
    for t in range(pair.shape[0]):
        for j in range(pair.shape[1]):
            if 0 <= pair[t, j] < 20:
                want[t] += float(scores[t, j]) * rows[pair[t, j]].astype(np.float64)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_unweighted_and_all_sentinels_give_exact_zeros():
    rows, pair, _ = problem()
    pair[:] = -1
    out = np.full((pair.shape[0], rows.shape[1]), np.nan, dtype=np.float32)
    gemmops.gather_reduce(rows, pair, out)
    assert (out == 0).all()


def test_errors_name_the_operand():
    rows, pair, scores = problem()
    out = np.zeros((pair.shape[0], rows.shape[1]), dtype=np.float32)
    with pytest.raises(ValueError, match="pair_rows: must be int32"):
        gemmops.gather_reduce(rows, pair.astype(np.int64), out)
    with pytest.raises(ValueError, match="scores: must have pair_rows' shape"):
        gemmops.gather_reduce(rows, pair, out, np.ascontiguousarray(scores[:, :2]))
    with pytest.raises(ValueError, match="row_limit: must hold one element"):
        gemmops.gather_reduce(rows, pair, out, None, np.zeros(2, dtype=np.int32))
