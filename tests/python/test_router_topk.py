# tests/python/test_router_topk.py: gemmops.torch.router_topk (a router's softmax and top-k in one kernel)
# against torch's softmax, topk and autograd, on the host and on the GPU (kernels, and torch's ops where
# they are not offered), under torch.compile and in a CUDA graph, and its refusals
# SPDX-License-Identifier: Apache-2.0
import pytest

torch = pytest.importorskip("torch")

import gemmops as core  # noqa: E402
import gemmops.torch as gt  # noqa: E402


def distinct_logits(T, E, seed, dtype=torch.float32, device="cpu"):
    """A permutation of multiples of 1/16 (E <= 128: exact in bf16) or 1/128 in each row (bf16 rounds
    some of those together: ties, which the lower id wins)."""
    g = torch.Generator().manual_seed(seed)
    z = torch.stack([torch.randperm(E, generator=g) for _ in range(T)]).float() - E // 2
    return (z / (16 if E <= 128 else 128)).to(dtype).to(device)


def by_torch(logits, k, renormalize, bias):
    probs = torch.softmax(logits.double(), dim=-1)
    key = probs if bias is None else probs + bias.double()
    ids = torch.sort(key, dim=-1, descending=True, stable=True).indices[:, :k]  # a tie: the lower id
    w = probs.gather(1, ids)
    return ids, (w / w.sum(-1, keepdim=True) if renormalize else w)


CASES = [(1, 1, 1), (33, 8, 2), (64, 128, 8), (17, 60, 32), (9, 384, 8), (5, 1024, 4)]


@pytest.mark.parametrize("T,E,k", CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("renormalize", [False, True])
@pytest.mark.parametrize("bias", [None, "expert", "token"])
def test_matches_torch_forward_and_backward_on_the_host(T, E, k, dtype, renormalize, bias):
    logits = distinct_logits(T, E, seed=T + E, dtype=dtype).requires_grad_(True)
    b = None
    if bias is not None:
        g = torch.Generator().manual_seed(3)
        shape = (E,) if bias == "expert" else (T, E)
        b = (torch.rand(shape, generator=g) < 0.25).float() * 2.0
    ids, w = gt.router_topk(logits, k, renormalize, b)
    assert ids.dtype == torch.int32 and w.dtype == torch.float32 and ids.shape == (T, k)
    want_ids, want_w = by_torch(logits.detach(), k, renormalize, b)
    assert torch.equal(ids.long(), want_ids)
    torch.testing.assert_close(w.double(), want_w, rtol=2e-6, atol=1e-7)
    grad = torch.randn(T, k, generator=torch.Generator().manual_seed(5))
    (dl,) = torch.autograd.grad((w * grad).sum(), logits)
    ref = logits.detach().double().requires_grad_(True)
    _, rw = by_torch(ref, k, renormalize, b)
    (want,) = torch.autograd.grad((rw * grad.double()).sum(), ref)
    tol = 1e-6 if dtype == torch.float32 else 2e-3 if dtype == torch.float16 else 1e-2
    torch.testing.assert_close(dl.double(), want, rtol=tol, atol=tol * want.abs().max().item() + 1e-7)


def test_torch_compile_keeps_it_in_one_graph():
    logits = distinct_logits(40, 64, seed=2).requires_grad_(True)
    f = torch.compile(lambda z: gt.router_topk(z, 4, True), fullgraph=True, backend="aot_eager")
    ids, w = f(logits)
    eids, ew = gt.router_topk(logits, 4, True)
    assert torch.equal(ids, eids)
    torch.testing.assert_close(w, ew)
    (a,) = torch.autograd.grad(w.sum() * 0 + (w * w).sum(), logits)
    (b,) = torch.autograd.grad((ew * ew).sum(), logits)
    torch.testing.assert_close(a, b)


def test_eager_calls_take_the_autograd_function_not_the_custom_op():
    # A custom op costs tens of microseconds of host time a call, an autograd function a few: the
    # eager step's pace is its host's. Compiled graphs take the op (the test above).
    logits = distinct_logits(16, 32, seed=3).requires_grad_(True)
    ids, w = gt.router_topk(logits, 2, True)
    assert "RouterTopkFunction" in type(w.grad_fn).__name__, type(w.grad_fn).__name__
    assert not ids.requires_grad


@pytest.mark.parametrize("call,match", [
    (lambda z: gt.router_topk(z, 0), "k: must be 1 .. min"),
    (lambda z: gt.router_topk(z, 9), "k: must be 1 .. min\\(E, 32\\) = 8"),
    (lambda z: gt.router_topk(z[0], 2), "logits: must be \\(T, E\\)"),
    (lambda z: gt.router_topk(z, 2, selection_bias=torch.zeros(7)), "selection_bias: must be \\(E,\\)"),
    (lambda z: gt.router_topk(z, 2, selection_bias=torch.zeros(8, dtype=torch.float64)), "selection_bias: must be float32"),
    (lambda z: gt.router_topk(z.int(), 2), "logits: must be bf16, fp16 or fp32"),
])
def test_refuses_bad_arguments_naming_the_operand(call, match):
    with pytest.raises(ValueError, match=match):
        call(torch.randn(4, 8))


@pytest.mark.gpu
@pytest.mark.parametrize("T,E,k", [(1, 1, 1), (8192, 128, 8), (513, 60, 32), (300, 384, 6), (65, 1024, 4)])
@pytest.mark.parametrize("routing", ["", "torch"])
def test_on_the_gpu_kernels_and_torch_s_ops_agree_with_float64(T, E, k, routing, monkeypatch):
    monkeypatch.setenv("GEMMOPS_ROUTING", routing)
    logits = distinct_logits(T, E, seed=E, dtype=torch.bfloat16, device="cuda").requires_grad_(True)
    b = ((torch.rand(E, generator=torch.Generator().manual_seed(1)) < 0.2).float() * 2.0).cuda()
    ids, w = gt.router_topk(logits, k, True, b)
    want_ids, want_w = by_torch(logits.detach(), k, True, b)
    assert torch.equal(ids.long(), want_ids)
    torch.testing.assert_close(w.double(), want_w, rtol=2e-6, atol=1e-7)
    grad = torch.randn(T, k, device="cuda")
    (dl,) = torch.autograd.grad((w * grad).sum(), logits)
    ref = logits.detach().double().requires_grad_(True)
    _, rw = by_torch(ref, k, True, b)
    (want,) = torch.autograd.grad((rw * grad.double()).sum(), ref)
    torch.testing.assert_close(dl.double(), want, rtol=1e-2, atol=1e-2 * want.abs().max().item() + 1e-7)


@pytest.mark.gpu
def test_the_kernels_capture_into_a_cuda_graph(monkeypatch):
    monkeypatch.delenv("GEMMOPS_ROUTING", raising=False)
    logits = distinct_logits(1000, 128, seed=4, device="cuda")
    gt.router_topk(logits, 8, True)  # compiled outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        ids, w = gt.router_topk(logits, 8, True)
    logits.copy_(distinct_logits(1000, 128, seed=5, device="cuda"))
    graph.replay()
    torch.cuda.synchronize()
    eids, ew = gt.router_topk(logits, 8, True)
    assert torch.equal(ids, eids) and torch.equal(w, ew)


def test_the_core_call_writes_given_outputs():
    logits = distinct_logits(6, 16, seed=9)
    ids = torch.empty(6, 3, dtype=torch.int32)
    w = torch.empty(6, 3)
    core.router_topk(logits, 3, False, ids, w)
    want_ids, want_w = by_torch(logits, 3, False, None)
    assert torch.equal(ids.long(), want_ids)
    torch.testing.assert_close(w.double(), want_w)
