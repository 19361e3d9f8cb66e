# tests/python/test_grouped_layouts.py: the layouts an expert-parallel dispatcher hands over, from Python:
# the masked M-grouped form (3d x 3d with row counts) and aligned groups (padding rows between groups)
# SPDX-License-Identifier: Apache-2.0
import numpy as np
import pytest

import gemmops as ops


def run(args):
    op = ops.get_operators(args)[0]
    op.run(args, compiled_artifact=op.compile(args))
    return op


def test_masked_form_computes_each_groups_counted_rows_and_leaves_the_rest():
    rng = np.random.default_rng(0)
    G, max_m, K, N = 4, 6, 5, 3
    A = rng.standard_normal((G, max_m, K), dtype=np.float32)
    B = rng.standard_normal((G, K, N), dtype=np.float32)
    out = np.full((G, max_m, N), np.nan, dtype=np.float32)
    counts = np.array([6, 0, 1, 4], dtype=np.int32)
    args = ops.GroupedGemmArguments(A, B, out, accumulator_type="float32", offsets=counts)
    assert args.problem_shape["kind"] == "grouped_gemm_m_masked"
    assert run(args).name == "cpu_grouped_gemm_m_masked"
    for g in range(G):
        c = counts[g]
        np.testing.assert_allclose(out[g, :c], A[g, :c] @ B[g], rtol=1e-5, atol=1e-5)
        assert np.isnan(out[g, c:]).all(), f"group {g}: rows past its count were written"


def test_masked_counts_past_max_m_are_refused_naming_the_rule():
    A = np.zeros((2, 4, 3), np.float32)
    B = np.zeros((2, 3, 5), np.float32)
    out = np.zeros((2, 4, 5), np.float32)
    with pytest.raises(ValueError, match=r"offsets: the masked form's row counts must be in \[0, MaxM\] = \[0, 4\]"):
        ops.GroupedGemmArguments(A, B, out, accumulator_type="float32", offsets=np.array([5, 0], np.int32))


def test_aligned_groups_skip_their_padding_rows():
    rng = np.random.default_rng(1)
    K, N = 4, 3
    ends = np.array([3, 9, 9, 17], dtype=np.int32)  # starts 0, 8, 16, 16 with alignment 8; group 2 empty
    A = rng.standard_normal((20, K), dtype=np.float32)
    B = rng.standard_normal((4, K, N), dtype=np.float32)
    out = np.full((20, N), np.nan, dtype=np.float32)
    args = ops.GroupedGemmArguments(A, B, out, accumulator_type="float32", offsets=ends, group_alignment=8)
    assert args.group_alignment == 8
    run(args)
    for g, (start, end) in enumerate([(0, 3), (8, 9), (16, 16), (16, 17)]):
        np.testing.assert_allclose(out[start:end], A[start:end] @ B[g], rtol=1e-5, atol=1e-5)
    padding = [3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 17, 18, 19]
    assert np.isnan(out[padding]).all()


def test_a_group_alignment_that_is_no_power_of_two_is_refused():
    A, B, out = np.zeros((8, 4), np.float32), np.zeros((2, 4, 3), np.float32), np.zeros((8, 3), np.float32)
    with pytest.raises(ValueError, match="group_alignment: must be a power of two"):
        ops.GroupedGemmArguments(A, B, out, accumulator_type="float32", offsets=np.array([4, 8], np.int32),
                                 group_alignment=6)


def test_a_gathered_a_reads_its_rows_through_the_index():
    rng = np.random.default_rng(2)
    K, N, rows = 5, 3, 7
    ends = np.array([4, 4, 10], dtype=np.int32)
    A = rng.standard_normal((rows, K), dtype=np.float32)
    index = rng.integers(0, rows, 12).astype(np.int32)  # rows 10 and 11: past the last group, not read
    index[10:] = 1000
    B = rng.standard_normal((3, K, N), dtype=np.float32)
    out = np.full((12, N), np.nan, dtype=np.float32)
    args = ops.GroupedGemmArguments(A, B, out, accumulator_type="float32", offsets=ends, zero_tail=True,
                                    a_row_index=index)
    run(args)
    for g, (start, end) in enumerate([(0, 4), (4, 4), (4, 10)]):
        np.testing.assert_allclose(out[start:end], A[index[start:end]] @ B[g], rtol=1e-5, atol=1e-5)
    assert (out[10:] == 0).all()


def test_a_row_index_out_of_range_is_refused_naming_the_operand():
    A = np.zeros((4, 3), np.float32)
    B = np.zeros((1, 3, 2), np.float32)
    out = np.zeros((2, 2), np.float32)
    with pytest.raises(ValueError, match="a_row_index"):
        ops.GroupedGemmArguments(A, B, out, accumulator_type="float32", offsets=np.array([2], np.int32),
                                 a_row_index=np.array([0, 4], np.int32))


@pytest.mark.parametrize("gathered", ["a", "b", "both"])
def test_k_grouped_operands_gathered_along_k_read_their_k_rows_through_the_index(gathered):
    # The MoE's weight gradients: dW1 = x[tok]^T dh (A gathered), dW2 = a'^T dout[tok] (B gathered).
    rng = np.random.default_rng(3)
    M, N, rows, total_k = 4, 3, 6, 12
    ends = np.array([5, 5, 10], dtype=np.int32)  # group 1 empty; k 10 and 11 past the last group
    index = rng.integers(0, rows, total_k).astype(np.int32)
    index[10:] = 1000  # never read
    gather_a, gather_b = gathered in ("a", "both"), gathered in ("b", "both")
    x = rng.standard_normal((rows if gather_a else total_k, M), dtype=np.float32)
    B = rng.standard_normal((rows if gather_b else total_k, N), dtype=np.float32)
    out = np.full((3, M, N), np.nan, dtype=np.float32)
    args = ops.GroupedGemmArguments(x.T, B, out, accumulator_type="float32", offsets=ends,
                                    a_k_index=index if gather_a else None, b_k_index=index if gather_b else None)
    assert args.problem_shape["kind"] == "grouped_gemm_k"
    run(args)
    for g, (start, end) in enumerate([(0, 5), (5, 5), (5, 10)]):
        ks = index[start:end]
        a = x[ks].T if gather_a else x[start:end].T
        b = B[ks] if gather_b else B[start:end]
        np.testing.assert_allclose(out[g], a @ b, rtol=1e-5, atol=1e-5)


def test_a_k_index_out_of_range_is_refused_naming_the_operand():
    A = np.zeros((2, 4), np.float32)
    B = np.zeros((3, 2), np.float32)
    out = np.zeros((1, 2, 2), np.float32)
    with pytest.raises(ValueError, match=r"a_k_index: values must be columns of A, in \[0, 4\)"):
        ops.GroupedGemmArguments(A, B, out, accumulator_type="float32", offsets=np.array([3], np.int32),
                                 a_k_index=np.array([0, 4, 1], np.int32))


def test_a_plan_takes_each_calls_k_index_and_refuses_a_call_without_it():
    rng = np.random.default_rng(4)
    M, N, rows, total_k = 4, 3, 8, 8  # as many tokens as pairs: a call without the index has the same layouts
    ends = np.array([3, 8], dtype=np.int32)
    dout = rng.standard_normal((rows, N), dtype=np.float32)
    a = rng.standard_normal((total_k, M), dtype=np.float32)
    out = np.full((2, M, N), np.nan, dtype=np.float32)
    first = rng.integers(0, rows, total_k).astype(np.int32)
    plan = ops.make_plan(ops.GroupedGemmArguments(a.T, dout, out, accumulator_type="float32", offsets=ends,
                                                  b_k_index=first))
    later = rng.integers(0, rows, total_k).astype(np.int32)
    plan.run(ops.GroupedGemmArguments(a.T, dout, out, accumulator_type="float32", offsets=ends, b_k_index=later))
    for g, (start, end) in enumerate([(0, 3), (3, 8)]):
        np.testing.assert_allclose(out[g], a[start:end].T @ dout[later[start:end]], rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="b_k_index: must be given exactly when the plan's arguments gave it"):
        plan.run(ops.GroupedGemmArguments(a.T, dout, out, accumulator_type="float32", offsets=ends))
