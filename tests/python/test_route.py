# tests/python/test_route.py: gemmops.route (the MoE routing as one call: the pairs sorted by expert,
# stably, sentinels last) against torch's sort, on the host and on the GPU, and its refusals
# SPDX-License-Identifier: Apache-2.0
import pytest

torch = pytest.importorskip("torch")

import gemmops as core  # noqa: E402
from gemmops.torch import _routing  # noqa: E402
from gemmops.torch._combine import pair_rows  # noqa: E402


def routing(T, k, E, seed, sentinels=0.1, skew=0.3):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, E, (T, k), generator=g)
    r = torch.rand(T, k, generator=g)
    ids[r < skew] = 0
    ids[r > 1 - sentinels / 2] = E + 2
    ids[(r > 1 - sentinels) & (r <= 1 - sentinels / 2)] = -1
    return ids, torch.rand(T, k, generator=g)


def by_torch(ids, E, scores):
    order, offsets, token = _routing.route_by_torch(ids, E)
    return offsets, token.to(torch.int32), pair_rows(order, *ids.shape), scores.reshape(-1)[order]


def by_route(ids, E, scores):
    T, k = ids.shape
    d = ids.device
    offsets, token = torch.empty(E, dtype=torch.int32, device=d), torch.empty(T * k, dtype=torch.int32, device=d)
    pair, sorted_scores = torch.empty(T, k, dtype=torch.int32, device=d), torch.empty(T * k, device=d)
    n = core.route_workspace_size(T * k, E)
    ws = torch.empty(max(n, 1), dtype=torch.uint8, device=d)
    stream = torch.cuda.current_stream(d).cuda_stream if d.type == "cuda" else 0
    core.route(ids.to(torch.int32), E, offsets, token, pair, scores, sorted_scores,
               ws.data_ptr() if d.type == "cuda" else 0, n if d.type == "cuda" else 0, stream)
    return offsets, token, pair, sorted_scores


@pytest.mark.parametrize("T,k,E", [(1, 1, 1), (37, 8, 128), (300, 2, 8), (0, 4, 16)])
def test_route_on_the_host_is_torchs_stable_sort(T, k, E):
    ids, scores = routing(T, k, E, seed=T + E)
    for got, want, what in zip(by_route(ids, E, scores), by_torch(ids, E, scores),
                               ("offsets", "token", "pair", "sorted scores")):
        assert torch.equal(got, want), what


def test_route_refuses_naming_the_operand():
    ids, scores = routing(8, 2, 4, seed=1)
    with pytest.raises(ValueError, match="num_experts: must be 1 .. 8192"):
        by_route(ids, 0, scores)
    offsets = torch.empty(5, dtype=torch.int32)
    with pytest.raises(ValueError, match=r"offsets: must be \(E,\) = \(4\)"):
        core.route(ids.int(), 4, offsets, torch.empty(16, dtype=torch.int32), torch.empty(8, 2, dtype=torch.int32))
    with pytest.raises(ValueError, match="token: must be int32"):
        core.route(ids.int(), 4, torch.empty(4, dtype=torch.int32), torch.empty(16), torch.empty(8, 2, dtype=torch.int32))


@pytest.mark.gpu
@pytest.mark.parametrize("T,k,E", [(37, 8, 128), (8192, 8, 128), (4096, 2, 8), (3000, 6, 8192), (65536, 8, 384)])
def test_route_on_the_gpu_is_torchs_stable_sort(T, k, E):
    ids, scores = routing(T, k, E, seed=T + k)
    ids, scores = ids.cuda(), scores.cuda()
    for got, want, what in zip(by_route(ids, E, scores), by_torch(ids, E, scores),
                               ("offsets", "token", "pair", "sorted scores")):
        assert torch.equal(got, want), what


@pytest.mark.gpu
def test_the_moe_step_with_the_routing_kernels_is_the_same_bits(monkeypatch):
    import gemmops.torch as gt
    T, E, k, H, I = 300, 6, 3, 256, 128
    g = torch.Generator().manual_seed(4)
    x = torch.randn(T, H, generator=g).cuda().bfloat16().requires_grad_(True)
    ids = torch.randint(0, E, (T, k), generator=g).cuda()
    w = torch.rand(T, k, generator=g).cuda().requires_grad_(True)
    wu = (torch.randn(E, H, 2 * I, generator=g) / H ** 0.5).cuda().bfloat16().requires_grad_(True)
    wd = (torch.randn(E, I, H, generator=g) / I ** 0.5).cuda().bfloat16().requires_grad_(True)
    grad = torch.randn(T, H, generator=g).cuda().bfloat16()

    def step():
        out = gt.moe_experts(x, ids, w, wu, wd)
        return [out] + list(torch.autograd.grad(out, [x, w, wu, wd], grad))

    monkeypatch.setenv("GEMMOPS_ROUTING", "torch")
    assert not _routing.kernel_offered(x.device)
    by_sort = step()
    monkeypatch.delenv("GEMMOPS_ROUTING")
    assert _routing.kernel_offered(x.device)
    by_kernels = step()
    for a, b in zip(by_kernels, by_sort):
        assert torch.equal(a, b)
