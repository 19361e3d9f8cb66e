# tests/python/test_fp8_quantize.py: gemmops.fp8.quantize on CUDA torch tensors gives CUDA q and scales
# with the host's bits (every granularity and layout, bf16 and fp32, stacked, ragged, transposed views),
# on torch's current stream; non-finite blocks get NaN scales and codes; fake tensors are refused
# SPDX-License-Identifier: Apache-2.0
import pytest

torch = pytest.importorskip("torch")

import gemmops as ops  # noqa: E402

GRANULARITIES = ["tensor", "row", "block_1x128", "block_128x128"]


def bits(q, s):
    """q's codes and the scales as integers, on the host."""
    return q.view(torch.uint8).cpu(), s.scales.contiguous().view(torch.int32).cpu()


def make_x(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g) * torch.exp2(torch.randint(-10, 10, shape[:-1] + (1,), generator=g).float())
    if shape[-2] > 5:
        x[..., 3, :] = 0  # an all-zero row
        x[..., 5, :] *= 1e-6  # a tiny row: subnormal codes
    return x.to(dtype)


def test_the_host_takes_a_stream_argument_and_ignores_it():
    x = make_x((8, 130), torch.float32, 0)
    q = torch.empty(8, 130, dtype=torch.float8_e4m3fn)
    s = ops.OperandScales(torch.zeros(8, 2), "block_1x128")
    ops.quantize_fp8(x, q, s, stream=0)
    q2, s2 = ops.fp8.quantize(x)
    assert torch.equal(q.view(torch.uint8), q2.view(torch.uint8)) and torch.equal(s.scales, s2.scales)


def test_meta_tensors_are_refused_naming_the_tensor():
    with pytest.raises(ValueError, match=r"^x: run needs data; got a fake tensor \(no data pointer\)$"):
        ops.fp8.quantize(torch.empty(4, 256, device="meta"))


def test_a_cuda_x_with_host_q_is_refused_naming_q():
    x = ops.TensorSpec((4, 256), "bf16")  # fake, cuda:0
    q = torch.empty(4, 256, dtype=torch.float8_e4m3fn)
    with pytest.raises(ValueError, match=r"^q: must be on x's device \(cuda:0\); got cpu$"):
        ops.quantize_fp8(x, q, ops.OperandScales(ops.TensorSpec((4, 2), "fp32")))


@pytest.mark.gpu
@pytest.mark.parametrize("granularity", GRANULARITIES)
@pytest.mark.parametrize("layout", ["k_major", "mn_major"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("shape", [(130, 300), (257, 129), (2, 70, 200), (5, 130)])
@pytest.mark.parametrize("transposed", [False, True])
def test_cuda_tensors_give_the_hosts_bits(granularity, layout, dtype, shape, transposed):
    x = make_x(shape, dtype, seed=len(shape) * 1000 + shape[-1])
    if transposed:  # x = B^T of a row-major B: rows contiguous
        x = x.transpose(-1, -2).contiguous().transpose(-1, -2)
    q_host, s_host = ops.fp8.quantize(x, granularity, layout)
    q_dev, s_dev = ops.fp8.quantize(x.cuda(), granularity, layout)
    assert q_dev.is_cuda and s_dev.scales.is_cuda and q_dev.dtype == torch.float8_e4m3fn
    assert s_dev.scales.shape == s_host.scales.shape and s_dev.scales.stride() == s_host.scales.stride()
    got, want = bits(q_dev, s_dev), bits(q_host, s_host)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


@pytest.mark.gpu
@pytest.mark.parametrize("granularity", GRANULARITIES)
def test_a_block_holding_nan_or_inf_gets_a_nan_scale_and_nan_codes_on_the_gpu(granularity):
    x = make_x((200, 300), torch.float32, 5)
    x[7, 130], x[150, 20] = float("nan"), float("-inf")
    with pytest.raises(ValueError, match=r"^x: must be finite; got nan at row 7, column 130$"):
        ops.fp8.quantize(x, granularity)  # the host refuses
    q, s = ops.fp8.quantize(x.cuda(), granularity)
    clean = x.clone()
    clean[7, 130] = clean[150, 20] = 0
    q_want, s_want = ops.fp8.quantize(clean, granularity)
    q_want, sc_want = q_want.view(torch.uint8).clone(), s_want.scales.clone()
    for r, c in [(7, 130), (150, 20)]:
        rows, cols = {"tensor": (slice(None), slice(None)), "row": (r, slice(None)),
                      "block_1x128": (r, slice(c // 128 * 128, c // 128 * 128 + 128)),
                      "block_128x128": (slice(r // 128 * 128, r // 128 * 128 + 128),
                                        slice(c // 128 * 128, c // 128 * 128 + 128))}[granularity]
        q_want[rows, cols] = 0x7F
        index = {"tensor": (0,), "row": (r,), "block_1x128": (r, c // 128),
                 "block_128x128": (r // 128, c // 128)}[granularity]
        sc_want[index] = float("nan")
    assert torch.equal(q.view(torch.uint8).cpu(), q_want)
    got = s.scales.cpu()
    assert torch.equal(got.isnan(), sc_want.isnan())
    assert torch.equal(got.view(torch.int32)[got.isnan()], torch.full_like(got.view(torch.int32)[got.isnan()],
                                                                             0x7FC00000))
    assert torch.equal(got[~got.isnan()], sc_want[~sc_want.isnan()])


@pytest.mark.gpu
def test_quantisation_runs_on_torchs_current_stream():
    x = make_x((4096, 2048), torch.bfloat16, 9)
    q_host, s_host = ops.fp8.quantize(x, "block_1x128", "mn_major")
    x_dev = x.cuda()
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        xd = torch.zeros_like(x_dev)
        torch.cuda._sleep(50_000_000)  # x arrives late on this stream: a launch elsewhere would see zeros
        xd.copy_(x_dev)
        q, s = ops.fp8.quantize(xd, "block_1x128", "mn_major")
    side.synchronize()
    got, want = bits(q, s), bits(q_host, s_host)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
