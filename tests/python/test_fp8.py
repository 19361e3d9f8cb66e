# tests/python/test_fp8.py: fp8 operands with scales through the CPU operators (numpy and CPU torch),
# gemmops.OperandScales and its errors, and the quantisation helpers
# SPDX-License-Identifier: Apache-2.0
import numpy as np
import pytest

import gemmops as ops
from helpers import offsets_of, starts_ends

ml_dtypes = pytest.importorskip("ml_dtypes", reason="numpy has no fp8 without ml_dtypes")

GRANULARITIES = ["tensor", "row", "block_1x128", "block_128x128"]


def run_cpu(args):
    found = ops.get_operators(args, target="cpu")
    assert found, f"no operator for {args!r}: {ops.get_rejections(args, target='cpu')}"
    op = found[0]
    op.run(args, compiled_artifact=op.compile(args))


def expand(scales, granularity, mn, k):
    """The scales of one matrix (MN, K) as a dense (MN, K) float64 array."""
    s = np.asarray(scales, dtype=np.float64)
    if granularity == "tensor":
        return np.full((mn, k), s.reshape(-1)[0])
    if granularity == "row":
        return np.repeat(s.reshape(mn, 1), k, axis=1)
    if granularity == "block_1x128":
        return np.repeat(s, 128, axis=1)[:, :k]
    return np.repeat(np.repeat(s, 128, axis=0), 128, axis=1)[:mn, :k]


def dequantized(q, sc, granularity):
    """q (R, C) [or (L, R, C)] e4m3 with scales along C, as float64."""
    v = q.astype(np.float64)
    if v.ndim == 2:
        return v * expand(sc, granularity, *v.shape)
    return np.stack([v[i] * expand(np.asarray(sc)[i], granularity, *v.shape[1:]) for i in range(v.shape[0])])


@pytest.mark.parametrize("granularity", GRANULARITIES)
@pytest.mark.parametrize("layout", ["k_major", "mn_major"])
def test_quantize_round_trip_and_exact_scales(granularity, layout):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((130, 300)) * np.exp2(rng.integers(-8, 8, (130, 1)))).astype(np.float32)
    q, s = ops.fp8.quantize(x, granularity, layout)
    assert q.dtype == ml_dtypes.float8_e4m3fn and q.shape == x.shape
    assert s.granularity == granularity
    assert s.scales.shape == ops.scale_shape(granularity, 130, 300)
    dense = expand(s.scales, granularity, 130, 300)
    back = q.astype(np.float64) * dense
    assert np.all(np.abs(back - x) <= (2.0**-4 * np.abs(x) + 2.0**-10 * dense) * (1 + 1e-6))
    if granularity == "block_1x128":
        amax = np.maximum(np.abs(np.pad(x, ((0, 0), (0, 84)))).reshape(130, 3, 128).max(axis=2), np.float32(1e-4))
        np.testing.assert_array_equal(np.asarray(s.scales), amax / np.float32(448))


def test_m_grouped_scaled_fp8_matches_numpy():
    rng = np.random.default_rng(2)
    sizes = [0, 1, 130, 40]  # an empty group, a 1-row group; 9 rows past the end
    total_m, K, N, G = 180, 300, 140, 4
    offsets = offsets_of(sizes)
    qa, sa = ops.fp8.quantize(rng.standard_normal((total_m, K)).astype(np.float32), "block_1x128", "mn_major")
    w = rng.standard_normal((G, N, K)).astype(np.float32)  # weights as models store them
    qw, sb = ops.fp8.quantize(w, "block_128x128")
    B = qw.swapaxes(-1, -2)  # (G, K, N), K-major
    out = np.full((total_m, N), -7.0, dtype=np.float32)
    args = ops.GroupedGemmArguments(qa, B, out, offsets=offsets, a_scales=sa, b_scales=sb)
    assert args.a_scales is sa and args.b_scales is sb
    run_cpu(args)
    a = dequantized(qa, sa.scales, "block_1x128")
    b = dequantized(qw, sb.scales, "block_128x128").swapaxes(-1, -2)
    for g, (s, e) in enumerate(starts_ends(offsets)):
        np.testing.assert_allclose(out[s:e], a[s:e] @ b[g], rtol=1e-4, atol=1e-3)
    assert np.all(out[offsets[-1]:] == -7.0)


@pytest.mark.parametrize("granularity", GRANULARITIES)
def test_k_grouped_scaled_fp8_with_straddling_blocks_matches_numpy(granularity):
    rng = np.random.default_rng(3)
    offsets = np.array([0, 100, 101, 250], dtype=np.int32)  # 128-blocks straddle groups; K 250.. unused
    M, N, total_k, G = 9, 11, 300, 4
    qa = rng.standard_normal((M, total_k)).astype(ml_dtypes.float8_e4m3fn)
    qb = rng.standard_normal((total_k, N)).astype(ml_dtypes.float8_e4m3fn)
    block = granularity.startswith("block")
    if block:  # global K blocks
        sa = rng.uniform(0.5, 2, ops.scale_shape(granularity, M, total_k)).astype(np.float32)
        sb = rng.uniform(0.5, 2, ops.scale_shape(granularity, N, total_k)).astype(np.float32)
    else:  # per group
        sa = rng.uniform(0.5, 2, ops.scale_shape(granularity, M, total_k, G)).astype(np.float32)
        sb = rng.uniform(0.5, 2, ops.scale_shape(granularity, N, total_k, G)).astype(np.float32)
    out = np.full((G, M, N), np.nan, dtype=np.float32)
    args = ops.GroupedGemmArguments(qa, qb, out, offsets=offsets, a_scales=ops.OperandScales(sa, granularity),
                                    b_scales=ops.OperandScales(sb, granularity))
    run_cpu(args)
    for g, (s, e) in enumerate(starts_ends(offsets)):
        if block:
            a = qa.astype(np.float64) * expand(sa, granularity, M, total_k)
            b = (qb.astype(np.float64).T * expand(sb, granularity, N, total_k)).T
        else:
            a = qa.astype(np.float64) * expand(sa[g], granularity, M, total_k)
            b = (qb.astype(np.float64).T * expand(sb[g], granularity, N, total_k)).T
        np.testing.assert_allclose(out[g], a[:, s:e] @ b[s:e], rtol=1e-4, atol=1e-4)


def test_operand_scales_errors_name_the_operand_and_rule():
    A = np.zeros((100, 300), dtype=ml_dtypes.float8_e4m3fn)
    B = np.zeros((4, 300, 64), dtype=ml_dtypes.float8_e4m3fn)
    out = np.zeros((100, 64), dtype=np.float32)
    offsets = offsets_of([25, 25, 25, 25])
    bad = ops.OperandScales(np.zeros((100, 2), np.float32))
    with pytest.raises(ValueError, match=r"^a_scales: block_1x128 scales of A \(TotalM,K\) = \(100, 300\) must have "
                                         r"shape \(TotalM, ceil\(K/128\)\) = \(100, 3\); got \(100, 2\)$"):
        ops.GroupedGemmArguments(A, B, out, offsets=offsets, a_scales=bad)
    with pytest.raises(ValueError, match=r"^b_scales: dtype must be fp32; got fp16$"):
        ops.GroupedGemmArguments(A, B, out, offsets=offsets,
                                 b_scales=ops.OperandScales(np.zeros((4, 64), np.float16), "row"))
    with pytest.raises(ValueError, match=r"^scales: dtype must be fp32; got float64$"):  # no gemmops dtype at all
        ops.OperandScales(np.zeros((4, 64)), "row")
    with pytest.raises(ValueError, match=r"^a_scales: scales apply to fp8 operands \(e4m3, e5m2\) only; A is fp32$"):
        ops.GemmArguments(np.zeros((4, 8), np.float32), np.zeros((8, 2), np.float32), np.zeros((4, 2), np.float32),
                          a_scales=ops.OperandScales(np.ones(1, np.float32), "tensor"))
    with pytest.raises(ValueError, match=r'^granularity: must be one of tensor, row, block_1x128, block_128x128; '
                                         r'got "block_2x2"$'):
        ops.OperandScales(np.zeros(1, np.float32), "block_2x2")
    with pytest.raises(ValueError, match=r'^layout: must be one of k_major, mn_major; got "row_major"$'):
        ops.OperandScales(np.zeros(1, np.float32), "tensor", "row_major")
    with pytest.raises(TypeError, match=r"^a_scales: must be a gemmops.OperandScales or None; got ndarray$"):
        ops.GroupedGemmArguments(A, B, out, offsets=offsets, a_scales=np.zeros((100, 3), np.float32))
    with pytest.raises(ValueError, match=r"^x: must be finite; got inf at row 0, column 1$"):
        x = np.zeros((2, 4), np.float32)
        x[0, 1] = np.inf
        ops.fp8.quantize(x)


def test_fake_scaled_arguments_are_discovered_and_gpu_operators_refuse_them():
    spec = ops.TensorSpec
    args = ops.GroupedGemmArguments(spec((256, 512), "e4m3"), spec((4, 512, 256), "e4m3", strides=(512 * 256, 1, 512)),
                                    spec((256, 256), "bf16"), offsets=spec((4,), "int32"),
                                    a_scales=ops.OperandScales(spec((256, 4), "fp32", strides=(1, 256)),
                                                               "block_1x128", "mn_major"),
                                    b_scales=ops.OperandScales(spec((4, 2, 4), "fp32"), "block_128x128"))
    assert ops.get_operators(args, target="90a") == []
    reasons = [r for r in ops.get_rejections(args, target="90a")]
    assert reasons  # every GPU operator says why (today: fp8 dtypes are not served at all)
    cpu_args = ops.GroupedGemmArguments(spec((256, 512), "e4m3", device="cpu"),
                                        spec((4, 512, 256), "e4m3", device="cpu"), spec((256, 256), "bf16", device="cpu"),
                                        offsets=spec((4,), "int32", device="cpu"),
                                        a_scales=ops.OperandScales(spec((256, 4), "fp32", device="cpu"), "block_1x128"))
    assert [op.name for op in ops.get_operators(cpu_args, target="cpu")] == ["cpu_grouped_gemm_m"]


@pytest.mark.torch
def test_torch_cpu_tensors_quantise_and_run():
    import torch

    torch.manual_seed(0)
    a = torch.randn(33, 260)
    w = torch.randn(20, 260)  # (N, K)
    qa, sa = ops.fp8.quantize(a, "block_1x128", "mn_major")
    qw, sb = ops.fp8.quantize(w, "block_128x128")
    assert qa.dtype == torch.float8_e4m3fn and sa.scales.stride() == (1, 36)
    out = torch.empty(33, 20)
    run_cpu(ops.GemmArguments(qa, qw.T, out, a_scales=sa, b_scales=sb))
    ref = dequantized(qa.float().numpy(), sa.scales.numpy(), "block_1x128") @ \
        dequantized(qw.float().numpy(), sb.scales.numpy(), "block_128x128").T
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-3)


def test_metadata_lists_the_scalings_served_and_repr_shows_scales():
    args = ops.GemmArguments(np.zeros((4, 8), ml_dtypes.float8_e4m3fn), np.zeros((8, 2), ml_dtypes.float8_e4m3fn),
                             np.zeros((4, 2), np.float32), a_scales=ops.OperandScales(np.ones(4, np.float32), "row"))
    assert "a_scales OperandScales(row, k_major, fp32 (4,)" in repr(args)
    cpu = ops.get_operators(args, target="cpu")[0]
    assert cpu.metadata["constraints"]["scalings"] == {
        "a": GRANULARITIES, "b": GRANULARITIES, "layouts": ["k_major", "mn_major"]}
    # A GPU operator lists scalings only where its main loop is fp8 (the sm90 fp8 design): torch's rowwise scales, or 1x128 activation and 128x128 weight blocks, k-major.
    fp8_main_loop = {"a": ["row", "block_1x128"], "b": ["row", "block_128x128"], "layouts": ["k_major"]}
    for op in ops.all_operators():
        if op.metadata["provider"] != "cpu":
            serves_e4m3 = "e4m3" in op.metadata["constraints"]["a_dtypes"]
            assert op.metadata["constraints"]["scalings"] == (
                fp8_main_loop if serves_e4m3 else {"a": [], "b": [], "layouts": []}), op.name
