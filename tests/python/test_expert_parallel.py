# tests/python/test_expert_parallel.py: the expert-parallel layer (gemmops.torch.expert_parallel) against a
# per-token reference, in one process and over gloo with 2 and 4 ranks on the CPU operators
# SPDX-License-Identifier: Apache-2.0
import os
import socket

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

from gemmops.torch import expert_parallel as ep  # noqa: E402

E, H, I, K = 8, 32, 16, 3  # experts, hidden, intermediate, top-k


def weights(activation, seed=0):
    g = torch.Generator().manual_seed(seed)
    n_up = 2 * I if activation == "swiglu" else I
    return (torch.randn(E, H, n_up, generator=g) / H ** 0.5, torch.randn(E, I, H, generator=g) / I ** 0.5)


def tokens(rank, activation, seed=1, experts_used=E - 1):
    """Rank r's tokens: ragged (rank 1 has a single token), expert 0 taking most choices, the experts
    from experts_used on with none (E - 2: the last of 4 ranks receives no rows), and (rank 0) one
    choice outside [0, E) that must add nothing."""
    g = torch.Generator().manual_seed(seed + 100 * rank)
    T = [37, 1, 20, 9][rank % 4]
    x = torch.randn(T, H, generator=g)
    ids = torch.randint(0, experts_used, (T, K), generator=g)
    ids[: T // 2, 0] = 0
    if rank == 0:
        ids[3, 2] = E + 5
    w = torch.rand(T, K, generator=g)
    return x, ids, w


def reference(x, ids, w, w_up, w_down, activation):
    """Per token and choice, in float64: sum_j w[t, j] * down_e(act(x[t] @ up_e))."""
    x, w, w_up, w_down = x.double(), w.double(), w_up.double(), w_down.double()
    out = torch.zeros_like(x)
    for t in range(x.shape[0]):
        for j in range(ids.shape[1]):
            e = int(ids[t, j])
            if not 0 <= e < E:
                continue
            h = x[t] @ w_up[e]
            if activation == "swiglu":
                gate, up = h.chunk(2)
                h = F.silu(gate) * up
            elif activation == "silu":
                h = F.silu(h)
            out[t] += w[t, j] * (h @ w_down[e])
    return out


def leaves(*ts):
    return [t.clone().requires_grad_(True) for t in ts]


@pytest.mark.parametrize("activation", ["swiglu", "silu"])
def test_one_rank_matches_the_reference_forward_and_backward(activation):
    w_up, w_down = weights(activation)
    x, ids, w = tokens(0, activation)
    xr, wr, ur, dr = leaves(x, w, w_up, w_down)
    xe, we, ue, de = leaves(x, w, w_up, w_down)
    got = ep.expert_parallel_experts(xe, ids, we, ue, de, E, activation)
    want = reference(xr, ids, wr, ur, dr, activation)
    torch.testing.assert_close(got.double(), want, rtol=1e-4, atol=1e-4)
    grad = torch.randn_like(got)
    (got * grad).sum().backward()
    (want * grad.double()).sum().backward()
    for a, b, name in ((xe, xr, "x"), (we, wr, "topk_weights"), (ue, ur, "w_up"), (de, dr, "w_down")):
        torch.testing.assert_close(a.grad.double(), b.grad.double(), rtol=1e-4, atol=1e-4, msg=name)


def test_bad_inputs_are_refused_naming_the_rule():
    with pytest.raises(ValueError, match="must divide num_experts"):
        ep.ExpertPlacement(8, 3, 0)
    w_up, w_down = weights("silu")
    x, ids, w = tokens(0, "silu")
    with pytest.raises(ValueError, match="activation"):
        ep.expert_parallel_experts(x, ids, w, w_up, w_down, E, "tanh")
    with pytest.raises(ValueError, match="topk_ids, topk_weights"):
        ep.expert_parallel_experts(x, ids[:, :2], w, w_up, w_down, E, "silu")
    with pytest.raises(ValueError, match="w_up, w_down"):
        ep.expert_parallel_experts(x, ids, w, w_up[:4], w_down, E, "silu")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_main(rank, world, port, activation, experts_used):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        torch.set_num_threads(1)
        w_up, w_down = weights(activation)
        local = slice(rank * (E // world), (rank + 1) * (E // world))
        x, ids, w = tokens(rank, activation, experts_used=experts_used)
        xe, we = leaves(x, w)
        ue, de = leaves(w_up[local], w_down[local])
        got = ep.expert_parallel_experts(xe, ids, we, ue, de, E, activation)
        grad = torch.randn(got.shape, generator=torch.Generator().manual_seed(7 + rank))
        (got * grad).sum().backward()
        # The reference sees every rank's tokens (regenerated here), so its weight gradients are the
        # sums the local experts' gradients must equal.
        ur, dr = leaves(w_up, w_down)
        loss = 0
        for r in range(world):
            xr_, idr, wr_ = tokens(r, activation, experts_used=experts_used)
            xr, wr = leaves(xr_, wr_)
            want = reference(xr, idr, wr, ur, dr, activation)
            g = torch.randn(want.shape, generator=torch.Generator().manual_seed(7 + r)).double()
            loss = loss + (want * g).sum()
            if r == rank:
                mine, mine_x, mine_w = want, xr, wr
        loss.backward()
        torch.testing.assert_close(got.double(), mine.detach(), rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(xe.grad.double(), mine_x.grad.double(), rtol=1e-4, atol=1e-4, msg="x")
        torch.testing.assert_close(we.grad.double(), mine_w.grad.double(), rtol=1e-4, atol=1e-4, msg="topk_weights")
        torch.testing.assert_close(ue.grad.double(), ur.grad[local].double(), rtol=1e-4, atol=1e-4, msg="w_up")
        torch.testing.assert_close(de.grad.double(), dr.grad[local].double(), rtol=1e-4, atol=1e-4, msg="w_down")
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("world,experts_used", [(2, E - 1), (4, E - 1), (4, E - 2)],
                         ids=["2 ranks", "4 ranks", "4 ranks, the last idle"])
def test_ranks_over_gloo_match_the_single_process_layer(world, experts_used):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.multiprocessing.spawn(_rank_main, args=(world, _free_port(), "swiglu", experts_used), nprocs=world,
                                join=True)
