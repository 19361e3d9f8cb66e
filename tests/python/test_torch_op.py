# tests/python/test_torch_op.py: torch.ops.gemmops.grouped_mm against float64 and torch._grouped_mm
# SPDX-License-Identifier: Apache-2.0
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
gtorch = pytest.importorskip("gemmops.torch", reason="gemmops.torch needs torch")

pytestmark = pytest.mark.torch


def make_problem(device, dtype, sizes=(24, 0, 40, 16), tail=8, K=64, N=32, seed=0, requires_grad=False):
    g = torch.Generator().manual_seed(seed)
    total_m = sum(sizes) + tail  # rows past offsets[-1]
    A = (torch.randint(-4, 5, (total_m, K), generator=g) / 8).to(dtype).to(device)
    B = (torch.randint(-4, 5, (len(sizes), N, K), generator=g) / 8).to(dtype).to(device).permute(0, 2, 1)
    offsets = torch.cumsum(torch.tensor(sizes), 0).to(torch.int32).to(device)
    if requires_grad:
        A.requires_grad_(True)
        B.requires_grad_(True)
    return A, B, offsets


def loop_reference(A, B, offsets, out_dtype=None):
    """Per-group float64 matmuls with autograd; rows past offsets[-1] are zero."""
    rows = []
    start = 0
    for gi, end in enumerate(offsets.tolist()):
        rows.append(A[start:end].double() @ B[gi].double())
        start = end
    rows.append(torch.zeros(A.shape[0] - start, B.shape[-1], dtype=torch.float64, device=A.device))
    return torch.cat(rows).to(out_dtype or A.dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cpu_forward_and_backward_match_a_float64_loop(dtype):
    A, B, offsets = make_problem("cpu", dtype, requires_grad=True)
    out = torch.ops.gemmops.grouped_mm(A, B, offsets)
    ref_A, ref_B = A.detach().clone().requires_grad_(True), B.detach().clone().requires_grad_(True)
    ref = loop_reference(ref_A, ref_B, offsets)
    torch.testing.assert_close(out, ref)
    assert torch.all(out[int(offsets[-1]):] == 0), "rows past offsets[-1] are zero"
    grad = (torch.randint(-4, 5, out.shape, generator=torch.Generator().manual_seed(1)) / 8).to(dtype)
    out.backward(grad)
    ref.backward(grad)
    torch.testing.assert_close(A.grad, ref_A.grad)
    torch.testing.assert_close(B.grad, ref_B.grad)
    assert torch.all(B.grad[1] == 0), "an empty group gets a zero weight gradient"


def test_out_dtype_and_fake_kernel_agree():
    A, B, offsets = make_problem("cpu", torch.bfloat16)
    out = gtorch.grouped_mm(A, B, offsets, out_dtype=torch.float32)
    assert out.dtype == torch.float32 and out.shape == (A.shape[0], B.shape[-1])
    torch.testing.assert_close(out, loop_reference(A, B, offsets, torch.float32))
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        fA, fB, foff = (mode.from_tensor(t) for t in (A, B, offsets))
        fake = torch.ops.gemmops.grouped_mm(fA, fB, foff, torch.float32)
    assert fake.shape == out.shape and fake.dtype == out.dtype


def test_opcheck_passes_on_cpu():
    A, B, offsets = make_problem("cpu", torch.float32, requires_grad=True)
    torch.library.opcheck(torch.ops.gemmops.grouped_mm.default, (A, B, offsets, None))


def grouped_mm_reference(A, B, offsets):
    if hasattr(torch, "_grouped_mm"):
        try:
            return torch._grouped_mm(A, B, offs=offsets), "torch._grouped_mm"
        except RuntimeError:
            pass
    return loop_reference(A, B, offsets), "float64 loop"


def gpu_problem(wrt):
    # Group sizes and dims multiples of 16 so that torch._grouped_mm takes them too. Only the
    # operand named by `wrt` requires grad, so backward computes that gradient alone.
    A, B, offsets = make_problem("cuda", torch.bfloat16, sizes=(64, 0, 128, 48), tail=16, K=128, N=64)
    (A if wrt == "A" else B).requires_grad_(True)
    return A, B, offsets


def forward_backward(A, B, offsets, wrt):
    out = gtorch.grouped_mm(A, B, offsets)
    ref_A = A.detach().clone().requires_grad_(A.requires_grad)
    ref_B = B.detach().clone().requires_grad_(B.requires_grad)
    ref, name = grouped_mm_reference(ref_A, ref_B, offsets)
    end = int(offsets[-1])
    torch.testing.assert_close(out[:end], ref[:end], msg=lambda m: f"vs {name}: {m}")
    assert torch.all(out[end:] == 0)
    grad = torch.randn_like(out)
    grad[end:] = 0  # torch._grouped_mm leaves those rows undefined
    inputs = (A,) if wrt == "A" else (B,)
    refs = (ref_A,) if wrt == "A" else (ref_B,)
    (got,) = torch.autograd.grad(out, inputs, grad)
    (want,) = torch.autograd.grad(ref, refs, grad)
    torch.testing.assert_close(got, want, msg=lambda m: f"d{wrt} vs {name}: {m}")


@pytest.mark.gpu
def test_gpu_forward_and_dA_match_torch_grouped_mm():
    A, B, offsets = gpu_problem("A")
    forward_backward(A, B, offsets, "A")


@pytest.mark.gpu
def test_gpu_dB_through_the_k_grouped_form_matches_torch_grouped_mm():
    import gemmops as ops

    A, B, offsets = gpu_problem("B")
    # The weight-gradient operands: A^T (K, TotalM) M-major and dOut (TotalM, N); the sm90
    # operators serve that layout, so backward never falls back to anything slower.
    probe = ops.GroupedGemmArguments(A.detach().t(), torch.empty(A.shape[0], B.shape[-1], device="cuda",
                                                                 dtype=A.dtype),
                                     torch.empty(len(offsets), A.shape[1], B.shape[-1], device="cuda",
                                                 dtype=A.dtype), offsets=offsets)
    found = ops.get_operators(probe)
    assert found and found[0].metadata["provider"] == "sm90", ops.get_rejections(probe)
    forward_backward(A, B, offsets, "B")


@pytest.mark.gpu
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float32])
def test_gpu_k_grouped_op_matches_a_float64_loop_on_ragged_groups(out_dtype):
    # Group K ranges of 0, 1 and odd lengths, K past offsets[-1]: each group sums its own range only.
    g = torch.Generator().manual_seed(3)
    sizes = [0, 1, 77, 130, 64, 5, 0, 200]
    total_k, M, N = sum(sizes) + 11, 136, 200
    A = torch.randn(total_k, M, generator=g).to(torch.bfloat16).cuda().t()  # (M, TotalK) M-major
    B = torch.randn(total_k, N, generator=g).to(torch.bfloat16).cuda()
    offsets = torch.cumsum(torch.tensor(sizes), 0).to(torch.int32).cuda()
    out = gtorch.grouped_mm_k(A, B, offsets, out_dtype=out_dtype)
    start = 0
    for gi, end in enumerate(offsets.tolist()):
        want = (A[:, start:end].double() @ B[start:end].double()).to(out_dtype)
        torch.testing.assert_close(out[gi], want, atol=2e-2, rtol=2e-2, msg=lambda m: f"group {gi}: {m}")
        start = end


@pytest.mark.gpu
def test_gpu_training_step_matches_torch_grouped_mm():
    # Forward, dA and dB together, as an MoE layer's backward calls them.
    A, B, offsets = make_problem("cuda", torch.bfloat16, sizes=(128, 0, 256, 64, 32), tail=0, K=256, N=128,
                                 seed=5, requires_grad=True)
    ref_A, ref_B = A.detach().clone().requires_grad_(True), B.detach().clone().requires_grad_(True)
    out = gtorch.grouped_mm(A, B, offsets)
    ref, name = grouped_mm_reference(ref_A, ref_B, offsets)
    grad = torch.randn_like(out)
    (out.float() * grad.float()).sum().backward()
    (ref.float() * grad.float()).sum().backward()
    torch.testing.assert_close(A.grad, ref_A.grad, msg=lambda m: f"dA vs {name}: {m}")
    torch.testing.assert_close(B.grad, ref_B.grad, atol=2e-2, rtol=2e-2, msg=lambda m: f"dB vs {name}: {m}")
    assert torch.all(B.grad[1] == 0), "an empty group gets a zero weight gradient"


@pytest.mark.gpu
def test_gpu_torch_compile_fullgraph_matches_eager():
    A, B, offsets = make_problem("cuda", torch.bfloat16, sizes=(64, 32, 96), tail=0, K=128, N=64)

    def layer(A, B, offsets):
        return torch.relu(torch.ops.gemmops.grouped_mm(A, B, offsets)) * 2

    compiled = torch.compile(layer, fullgraph=True)
    torch.testing.assert_close(compiled(A, B, offsets), layer(A, B, offsets))


@pytest.mark.gpu
def test_gpu_cuda_graph_capture_and_replay():
    A, B, offsets = make_problem("cuda", torch.bfloat16, sizes=(64, 32, 96), tail=16, K=128, N=64)
    gtorch.grouped_mm(A, B, offsets)  # compiles outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        with torch.cuda.graph(graph, stream=stream):
            out = gtorch.grouped_mm(A, B, offsets)
    A.copy_(torch.randn_like(A))  # replay must see new inputs in the captured buffers
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, loop_reference(A, B, offsets))


@pytest.mark.gpu
def test_gpu_split_k_in_a_cuda_graph_uses_a_workspace_from_the_graph_pool(monkeypatch):
    # Split-K wants a workspace (partials and flags, cleared on the stream); run() takes it from
    # torch's allocator, inside the capture too, and replays see new inputs.
    monkeypatch.setenv("GEMMOPS_SPLIT_K", "3")
    A, B, offsets = make_problem("cuda", torch.bfloat16, sizes=(1, 0, 130, 7), tail=5, K=1024, N=192, seed=2)
    gtorch.grouped_mm(A, B, offsets)  # compiles outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        with torch.cuda.graph(graph, stream=stream):
            out = gtorch.grouped_mm(A, B, offsets)
    for seed in range(2):
        A.copy_((torch.randint(-4, 5, A.shape, generator=torch.Generator().manual_seed(seed)) / 8).to(A.dtype))
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(out, loop_reference(A, B, offsets))


def test_meta_tensors_are_fake_operands_for_discovery_and_compile():
    import gemmops as ops

    A = torch.empty(8192, 1024, dtype=torch.bfloat16, device="meta")
    B = torch.empty(12, 2048, 1024, dtype=torch.bfloat16, device="meta").permute(0, 2, 1)
    out = torch.empty(8192, 2048, dtype=torch.bfloat16, device="meta")
    offsets = torch.empty(12, dtype=torch.int32, device="meta")
    args = ops.GroupedGemmArguments(A, B, out, accumulator_type=torch.float32, offsets=offsets)
    assert "fake" in repr(args) and "cuda:0" in repr(args)
    found = ops.get_operators(args, target="90a")
    assert found, ops.get_rejections(args, target="90a")
    with pytest.raises(ValueError, match="fake tensor"):
        found[0].run(args)  # run refuses fake operands before anything else
