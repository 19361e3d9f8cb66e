# tests/python/test_simt_gpu.py: the portable (simt) operators on torch CUDA tensors: the four forms of
# torch.nn.functional.grouped_mm in fp32, and a CUDA graph that reads new offsets at each replay
# SPDX-License-Identifier: Apache-2.0
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

import gemmops as ops  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.gpu]


def ints(shape, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(-4, 5, shape, generator=g) / 8).to(dtype).cuda()


def simt_first(args):
    found = ops.get_operators(args)
    assert found, f"no operator for {args!r}: {ops.get_rejections(args)}"
    assert found[0].metadata["provider"] == "simt", found[0].name
    return found[0]


def ends(offsets):
    e = [int(v) for v in offsets.tolist()]
    return list(zip([0] + e[:-1], e))


def test_gpu_the_four_forms_in_fp32_match_float64():
    offsets = torch.tensor([5, 5, 40, 61], dtype=torch.int32).cuda()  # an empty group, a tail
    G, M, N, K = 4, 24, 70, 48
    # 2d x 3d (M-grouped), A column-major as torch passes a transposed activation.
    A, B = ints((K, 64), 1).t(), ints((G, K, N), 2)
    out = torch.full((64, N), float("nan"), device="cuda")
    args = ops.GroupedGemmArguments(A, B, out, "fp32", offsets, zero_tail=True)
    simt_first(args).run(args)
    ref = torch.zeros(64, N, dtype=torch.float64, device="cuda")
    for g, (s, e) in enumerate(ends(offsets)):
        ref[s:e] = A[s:e].double() @ B[g].double()
    torch.testing.assert_close(out.double(), ref)
    # 2d x 2d (K-grouped): an empty group writes zeros.
    A, B = ints((M, 64), 3), ints((64, N), 4)
    out = torch.full((G, M, N), float("nan"), device="cuda")
    args = ops.GroupedGemmArguments(A, B, out, "fp32", offsets)
    simt_first(args).run(args)
    ref = torch.stack([A[:, s:e].double() @ B[s:e].double() for s, e in ends(offsets)])
    torch.testing.assert_close(out.double(), ref)
    # 3d x 2d (N-grouped): columns past the last group untouched.
    A, B = ints((G, M, K), 5), ints((K, 64), 6)
    out = torch.full((M, 64), 7.0, device="cuda")
    args = ops.GroupedGemmArguments(A, B, out, "fp32", offsets)
    simt_first(args).run(args)
    for g, (s, e) in enumerate(ends(offsets)):
        torch.testing.assert_close(out[:, s:e].double(), A[g].double() @ B[:, s:e].double())
    assert torch.all(out[:, 61:] == 7.0)
    # 3d x 3d (batched), A's batches padded.
    A, B = ints((G, M + 3, K), 7)[:, :M], ints((G, K, N), 8)
    out = torch.empty(G, M, N, device="cuda")
    args = ops.GemmArguments(A, B, out, "fp32")
    simt_first(args).run(args)
    torch.testing.assert_close(out.double(), A.double() @ B.double())


def test_gpu_a_cuda_graph_of_the_n_grouped_form_reads_the_offsets_at_each_replay():
    G, M, N, K = 3, 40, 200, 32
    A, B = ints((G, M, K), 9, torch.bfloat16), ints((K, N), 10, torch.bfloat16)
    offsets = torch.tensor([50, 120, 190], dtype=torch.int32).cuda()
    out = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
    args = ops.GroupedGemmArguments(A, B, out, "fp32", offsets, zero_tail=True)
    op = simt_first(args)
    artifact = op.compile(args)
    op.run(args, compiled_artifact=artifact)  # loads the module outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        with torch.cuda.graph(graph, stream=stream):
            op.run(args, compiled_artifact=artifact)
    for new in ([0, 100, 100], [200, 200, 200], [10, 20, 150]):
        offsets.copy_(torch.tensor(new, dtype=torch.int32))
        graph.replay()
        torch.cuda.synchronize()
        ref = torch.zeros(M, N, dtype=torch.float64, device="cuda")
        for g, (s, e) in enumerate(ends(offsets)):
            ref[:, s:e] = A[g].double() @ B[:, s:e].double()
        torch.testing.assert_close(out, ref.to(torch.bfloat16))
