# tests/python/test_autotune.py: gemmops.autotune (operators timed on real arguments) and the MoE step's
# opt-in choice by it (GEMMOPS_AUTOTUNE)
# SPDX-License-Identifier: Apache-2.0
import numpy as np
import pytest

import gemmops as ops

try:  # the MoE step's tests (marked `torch`) need it; gemmops.autotune's own do not
    import torch
    from gemmops.torch import _fused
except ImportError:
    torch = _fused = None


def grouped_problem():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 32)).astype(np.float32)
    b = rng.standard_normal((3, 32, 16)).astype(np.float32)
    out = np.zeros((64, 16), np.float32)
    offsets = np.array([20, 40, 64], np.int32)
    want = np.concatenate([a[:20] @ b[0], a[20:40] @ b[1], a[40:] @ b[2]])
    return ops.GroupedGemmArguments(a, b, out, offsets=offsets), out, want


def test_autotune_times_every_candidate_fastest_first_and_the_runs_compute_out():
    args, out, want = grouped_problem()
    timed = ops.autotune(args, warmup=1, iterations=3)
    assert sorted(op.name for op, _, _ in timed) == sorted(op.name for op in ops.get_operators(args))
    for op, us, status in timed:
        assert isinstance(op, ops.Operator) and status.ok and us > 0
    assert [us for _, us, _ in timed] == sorted(us for _, us, _ in timed)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_autotune_reports_a_candidate_that_does_not_serve_the_arguments_as_failed_with_why():
    args, _, _ = grouped_problem()
    dense = ops.GemmArguments(np.zeros((4, 8), np.float32), np.zeros((8, 2), np.float32), np.zeros((4, 2), np.float32))
    wrong = [op for op in ops.get_operators(dense) if not op.supports(args)]
    assert wrong, "a dense-only operator to offer"
    timed = ops.autotune(args, candidates=wrong + ops.get_operators(args), warmup=0, iterations=1)
    served = [op for op, _, status in timed if status.ok]
    failed = [(op, status) for op, _, status in timed if not status.ok]
    assert served and [op.name for op, _ in failed] == [op.name for op in wrong]
    assert all(status.error for _, status in failed)
    assert [op.name for op, _, _ in timed[: len(served)]] == [op.name for op in served]  # served first


def test_autotune_refuses_bad_counts_and_candidates():
    args, _, _ = grouped_problem()
    with pytest.raises(ValueError, match="iterations"):
        ops.autotune(args, iterations=0)
    with pytest.raises(TypeError, match="candidates must be gemmops Operators"):
        ops.autotune(args, candidates=["cpu_grouped_gemm_m"])


class FakeOp:
    def __init__(self, name, trial=False):
        self.name = name
        self.metadata = {"trial": trial}


class FakeStatus:
    def __init__(self, ok):
        self.ok = ok


def fake_timing(monkeypatch, fake_autotune, splits_k=lambda args, op: False):
    """_chosen_operator's surroundings faked: the timing, which plans split K, the stream, no capture."""
    monkeypatch.setattr(_fused._core, "autotune", fake_autotune)
    monkeypatch.setattr(_fused, "_splits_k", splits_k)
    monkeypatch.setattr(_fused, "_raw_stream", lambda device: 0)
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)


@pytest.mark.torch
def test_the_step_pieces_take_the_ranking_first_unless_autotune_is_asked(monkeypatch):
    ranked = [FakeOp("first"), FakeOp("second"), FakeOp("third")]
    calls = []

    def fake_autotune(args, candidates, **kw):
        calls.append([op.name for op in candidates])
        # the first fails (e.g. timed out), the third is fastest
        return [(ranked[2], 1.0, FakeStatus(True)), (ranked[1], 2.0, FakeStatus(True)), (ranked[0], 0.0, FakeStatus(False))]

    fake_timing(monkeypatch, fake_autotune)
    monkeypatch.delenv("GEMMOPS_AUTOTUNE", raising=False)
    assert _fused._chosen_operator(None, ranked, 0).name == "first" and not calls
    monkeypatch.setenv("GEMMOPS_AUTOTUNE", "1")
    assert _fused._chosen_operator(None, ranked, 0).name == "third"
    assert calls == [["first", "second", "third"]]
    # Host operands (device -1), a single candidate, or a graph capture: the ranking's first, untimed.
    assert _fused._chosen_operator(None, ranked, -1).name == "first"
    assert _fused._chosen_operator(None, ranked[:1], 0).name == "first"
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
    assert _fused._chosen_operator(None, ranked, 0).name == "first"
    assert len(calls) == 1


@pytest.mark.torch
def test_autotune_times_the_trial_designs_past_the_first_few_only_when_trials_are_asked(monkeypatch):
    ranked = [FakeOp(f"op{i}") for i in range(_fused.AUTOTUNE_CANDIDATES + 2)] + [FakeOp("trial", trial=True)]
    timed = []

    def fake_autotune(args, candidates, **kw):
        timed.append([op.name for op in candidates])
        return [(op, 1.0, FakeStatus(True)) for op in reversed(candidates)]

    fake_timing(monkeypatch, fake_autotune)
    monkeypatch.setenv("GEMMOPS_AUTOTUNE", "1")
    monkeypatch.delenv("GEMMOPS_TRIAL_DESIGNS", raising=False)
    first_few = [f"op{i}" for i in range(_fused.AUTOTUNE_CANDIDATES)]
    assert _fused._chosen_operator(None, ranked, 0).name == first_few[-1]
    monkeypatch.setenv("GEMMOPS_TRIAL_DESIGNS", "1")
    assert _fused._chosen_operator(None, ranked, 0).name == "trial"
    assert timed == [first_few, first_few + ["trial"]]


@pytest.mark.torch
def test_autotune_never_times_a_plan_that_splits_k_beside_one_that_does_not(monkeypatch):
    # A split-K plan sums K's parts in another order: were it timed against plans that do not split,
    # the step's bits could change with the run's timings. Candidates that split are dropped; where
    # the ranking's first splits, it is taken untimed.
    ranked = [FakeOp("first"), FakeOp("splits"), FakeOp("third")]
    timed = []

    def fake_autotune(args, candidates, **kw):
        timed.append([op.name for op in candidates])
        return [(op, 1.0, FakeStatus(True)) for op in reversed(candidates)]

    splitting = {"splits"}
    fake_timing(monkeypatch, fake_autotune, splits_k=lambda args, op: op.name in splitting)
    monkeypatch.setenv("GEMMOPS_AUTOTUNE", "1")
    assert _fused._chosen_operator(None, ranked, 0).name == "third"
    assert timed == [["first", "third"]]
    splitting = {"first"}
    assert _fused._chosen_operator(None, ranked, 0).name == "first"
    splitting = {"splits", "third"}  # one candidate left: nothing to time
    assert _fused._chosen_operator(None, ranked, 0).name == "first"
    assert len(timed) == 1


@pytest.mark.torch
def test_the_step_plain_pieces_are_grouped_mm_on_host_tensors_even_with_autotune(monkeypatch):
    # The down projection and the up projection's data gradient go through step_grouped_mm: on host
    # tensors (nothing to time) it is grouped_mm, with or without GEMMOPS_AUTOTUNE.
    import gemmops.torch as gt
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(10, 8, generator=g), torch.randn(3, 8, 6, generator=g)
    offs = torch.tensor([4, 4, 9], dtype=torch.int32)
    want = gt.grouped_mm(a, b, offs)
    monkeypatch.setenv("GEMMOPS_AUTOTUNE", "1")
    got = _fused.step_grouped_mm(a, b, offs)
    torch.testing.assert_close(got[:9], want[:9])


def moe_layer_inputs(T, E, k, H, I, seed):
    """x (T, H), ids (T, k), weights (T, k), w_gate_up (E, 2I, H) and w_down (E, H, I) as nn.Linear
    stores them, and an upstream gradient (T, H): bf16 on the GPU (ids and weights: int64, fp32)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, H, generator=g).cuda().bfloat16()
    ids = torch.randint(0, E, (T, k), generator=g).cuda()
    w = torch.rand(T, k, generator=g).cuda()
    wu = (torch.randn(E, 2 * I, H, generator=g) / H ** 0.5).cuda().bfloat16()
    wd = (torch.randn(E, H, I, generator=g) / I ** 0.5).cuda().bfloat16()
    return x, ids, w, wu, wd, torch.randn(T, H, generator=g).cuda().bfloat16()


@pytest.mark.torch
@pytest.mark.gpu
def test_the_moe_step_with_autotune_matches_the_ranked_step(monkeypatch):
    # The same layer twice on the GPU: the pieces' operators chosen by timing give the same result (up
    # to the designs' summation order) as the ranking's.
    import gemmops.torch as gt
    x, ids, w, wu, wd, _ = moe_layer_inputs(300, 6, 3, 256, 128, seed=4)
    wu, wd = wu.transpose(-2, -1), wd.transpose(-2, -1)
    ranked = gt.moe_experts(x, ids, w, wu, wd)
    monkeypatch.setenv("GEMMOPS_AUTOTUNE", "1")
    monkeypatch.setattr(_fused, "_step_plans", {})
    tuned = gt.moe_experts(x, ids, w, wu, wd)
    torch.testing.assert_close(tuned.float(), ranked.float(), rtol=2e-2, atol=2e-2)


@pytest.mark.torch
@pytest.mark.gpu
def test_any_design_gives_the_step_the_same_bits_so_autotune_keeps_it_deterministic(monkeypatch):
    # Autotuning picks a piece's design by timing, which may differ run to run. The step stays
    # deterministic only if every design computes the same bits (K summed in the same order, the
    # epilogue's partials per 64 columns): each piece on the last of the designs autotune would time
    # (the pick's kernel family) against the ranking's picks, forward and every gradient, bit for bit.
    import gemmops.torch as gt
    # (2I = 256: four k-blocks at most in the M-grouped pieces, so no design splits K, which would sum
    # in another order.)
    x0, ids, w0, wu0, wd0, dout = moe_layer_inputs(1024, 8, 4, 512, 128, seed=9)

    def step_choosing(choose):
        """The step's outputs and gradients with each piece's operator chosen by `choose(ops)`, and
        the chosen operators' names."""
        chosen = []

        def chooser(args, ops, device):
            op = choose(ops)
            chosen.append(op.name)
            return op

        monkeypatch.setattr(_fused, "_step_plans", {})
        monkeypatch.setattr(_fused, "_chosen_operator", chooser)
        x, w, wu, wd = (t.clone().requires_grad_(True) for t in (x0, w0, wu0, wd0))
        out = gt.moe_experts(x, ids, w, wu.transpose(-2, -1), wd.transpose(-2, -1))
        out.backward(dout)
        return [out.detach(), x.grad, w.grad, wu.grad, wd.grad], chosen

    def last_of_the_pick_s_family(ops):  # the last candidate autotune times that shares the pick's kernels
        family = ops[0].metadata["provider"]
        return [op for op in ops[:_fused.AUTOTUNE_CANDIDATES] if op.metadata["provider"] == family][-1]

    monkeypatch.setenv("GEMMOPS_AUTOTUNE", "1")  # every piece through a planned operator
    first, firsts = step_choosing(lambda ops: ops[0])
    last, chosen = step_choosing(last_of_the_pick_s_family)
    assert chosen != firsts, "every piece has one operator only: nothing compared"
    for a, b, what in zip(first, last, ("out", "x", "topk_weights", "w_gate_up", "w_down")):
        assert torch.equal(a, b), f"{what}: the ranking's picks {firsts} and the last designs {chosen} differ"
