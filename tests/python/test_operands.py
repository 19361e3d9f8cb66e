# tests/python/test_operands.py: operands as numpy and torch hand them over: read-only arrays (A, B and
# offsets are only read) and arrays without elements (zero strides in numpy), on every operator
# SPDX-License-Identifier: Apache-2.0
import numpy as np
import pytest

import gemmops as ops
from helpers import offsets_of, rand, ref_grouped_m


def run_best(args, target=None):
    found = ops.get_operators(args, target=target)
    assert found, f"no operator for {args!r}: {ops.get_rejections(args, target=target)}"
    op = found[0]
    op.run(args, compiled_artifact=op.compile(args))
    return op


def read_only(array):
    view = array.view()
    view.setflags(write=False)
    return view


def from_bytes(array):
    return np.frombuffer(array.tobytes(), dtype=array.dtype).reshape(array.shape)


def memmap_read_only(array, tmp_path):
    path = tmp_path / "operand.bin"
    array.tofile(path)
    return np.memmap(path, dtype=array.dtype, mode="r", shape=array.shape)


@pytest.mark.parametrize("make", ["setflags", "frombuffer", "memmap", "broadcast_to"])
def test_read_only_a_b_and_offsets_are_accepted(make, tmp_path):
    rng = np.random.default_rng(4)
    A = rand(rng, (16, 8), np.float32)
    B = rand(rng, (2, 8, 4), np.float32)
    offsets = offsets_of([6, 10])
    if make == "broadcast_to":  # every row of A the same, and one B for both groups
        A = np.broadcast_to(A[:1], A.shape)
        B = np.broadcast_to(B[:1], B.shape)
    else:
        convert = {"setflags": read_only, "frombuffer": from_bytes,
                   "memmap": lambda a: memmap_read_only(a, tmp_path)}[make]
        A, B = convert(A), convert(B)
        offsets = read_only(offsets)
    assert not A.flags.writeable and not B.flags.writeable
    out = np.zeros((16, 4), np.float32)
    run_best(ops.GroupedGemmArguments(A, B, out, offsets=offsets))
    np.testing.assert_allclose(out, ref_grouped_m(A, B, offsets, 16), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("make", ["setflags", "frombuffer", "broadcast_to"])
def test_a_read_only_out_is_refused_with_value_error(make):
    A, B = np.zeros((16, 8), np.float32), np.zeros((2, 8, 4), np.float32)
    out = np.zeros((16, 4), np.float32)
    out = {"setflags": read_only, "frombuffer": from_bytes,
           "broadcast_to": lambda o: np.broadcast_to(o[:1], o.shape)}[make](out)
    with pytest.raises(ValueError, match="^out: must be writable; got a read-only ndarray$"):
        ops.GroupedGemmArguments(A, B, out, offsets=offsets_of([6, 10]))


# Problems without work, as numpy gives them: every array without elements has strides (0, ...).
def empty_problems():
    f32 = np.float32
    ones = lambda *shape: np.ones(shape, f32)  # noqa: E731
    return {
        # An expert-parallel rank that received no tokens.
        "grouped_m TotalM=0": (ones(0, 8), ones(3, 8, 4), np.zeros((0, 4), f32), np.zeros(3, np.int32)),
        "grouped_m N=0": (ones(8, 8), ones(3, 8, 0), np.zeros((8, 0), f32), offsets_of([2, 3, 3])),
        "grouped_m G=0": (ones(8, 8), ones(0, 8, 4), np.full((8, 4), 7, f32), np.zeros(0, np.int32)),
        "grouped_k G=0": (ones(8, 12), ones(12, 4), np.zeros((0, 8, 4), f32), np.zeros(0, np.int32)),
        "grouped_k TotalK=0": (ones(8, 0), ones(0, 4), np.full((3, 8, 4), 7, f32), np.zeros(3, np.int32)),
        "gemm M=0": (ones(0, 8), ones(8, 4), np.zeros((0, 4), f32), None),
        "gemm K=0": (ones(8, 0), ones(0, 4), np.full((8, 4), 7, f32), None),
        "batched L=0": (ones(0, 8, 8), ones(0, 8, 4), np.zeros((0, 8, 4), f32), None),
    }


@pytest.mark.parametrize("case", list(empty_problems()))
def test_problems_without_work_run_on_the_cpu(case):
    A, B, out, offsets = empty_problems()[case]
    args = (ops.GemmArguments(A, B, out) if offsets is None
            else ops.GroupedGemmArguments(A, B, out, offsets=offsets))
    assert args.problem_shape["kind"] == args.kind
    run_best(args)
    if case == "grouped_m G=0":
        assert np.all(out == 7), "rows past offsets[G-1] are left untouched"
    elif out.size:
        assert np.all(out == 0), "a sum over no K is zero"


def test_every_cpu_operator_of_the_kind_accepts_zero_strided_empty_operands():
    # numpy's strides for arrays without elements are (0, 0): no rule on out's layout applies.
    out = np.zeros((0, 4), np.float32)
    assert out.strides == (0, 0)
    args = ops.GroupedGemmArguments(np.ones((0, 8), np.float32), np.ones((3, 8, 4), np.float32), out,
                                    offsets=np.zeros(3, np.int32))
    cpu = [op for op in ops.all_operators() if op.metadata["provider"] == "cpu"]
    serving = [op.name for op in cpu if op.supports(args)]
    assert serving == ["cpu_grouped_gemm_m"], [(op.name, op.supports(args).error) for op in cpu]


@pytest.mark.gpu
@pytest.mark.torch
@pytest.mark.parametrize("case", ["TotalM=0", "N=0", "G=0 (K-grouped)", "K=0"])
def test_problems_without_work_run_on_sm90(case):
    import torch

    dev, bf16 = "cuda", torch.bfloat16
    ones = lambda *shape: torch.ones(shape, dtype=bf16, device=dev)  # noqa: E731
    if case == "TotalM=0":
        args = ops.GroupedGemmArguments(ones(0, 64), ones(4, 64, 128), ones(0, 128),
                                        offsets=torch.zeros(4, dtype=torch.int32, device=dev))
    elif case == "N=0":
        args = ops.GroupedGemmArguments(ones(96, 64), ones(4, 64, 0), ones(96, 0),
                                        offsets=torch.tensor([0, 32, 64, 96], dtype=torch.int32, device=dev))
    elif case == "G=0 (K-grouped)":
        args = ops.GroupedGemmArguments(ones(64, 96), ones(96, 128), ones(0, 64, 128),
                                        offsets=torch.zeros(0, dtype=torch.int32, device=dev))
    else:
        args = ops.GemmArguments(ones(96, 0), ones(0, 128), ones(96, 128))
    op = run_best(args)
    torch.cuda.synchronize()
    assert op.metadata["provider"] == "sm90"
    if case == "K=0":
        assert torch.count_nonzero(args.out).item() == 0, "a sum over no K is zero"
