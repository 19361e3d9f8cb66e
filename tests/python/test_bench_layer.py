# tests/python/test_bench_layer.py: the arithmetic of the MoE layer and host benchmarks (bench/bench_common.py)
# without a GPU, and both benchmarks' code paths at tiny sizes on the CPU
# SPDX-License-Identifier: Apache-2.0
import math
import pathlib
import sys
from collections import Counter

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import bench_common as bc  # noqa: E402


def test_with_kernel_defines_sets_the_variable_for_the_call_only(monkeypatch):
    import os
    monkeypatch.setenv("GEMMOPS_KERNEL_DEFINES", "LEFT_OVER")
    seen = bc.with_kernel_defines("GEMMOPS_AB_BASELINE", lambda: os.environ.get("GEMMOPS_KERNEL_DEFINES"))
    assert seen == "GEMMOPS_AB_BASELINE" and "GEMMOPS_KERNEL_DEFINES" not in os.environ
    assert bc.with_kernel_defines(None, lambda: os.environ.get("GEMMOPS_KERNEL_DEFINES")) is None


def test_flops_count_both_grouped_gemms_and_the_backward_twice():
    # Qwen3-30B-A3B, T=8192: 65536 rows through H=2048 -> 2I=1536, then I=768 -> H.
    forward = 2 * 65536 * 2048 * 1536 + 2 * 65536 * 768 * 2048
    assert bc.layer_gemm_flops(8192, 8, 2048, 768) == forward == 6 * 8192 * 8 * 2048 * 768
    assert bc.layer_gemm_flops(8192, 8, 2048, 768, backward=True) == 3 * forward


@pytest.mark.parametrize("cfg", bc.LAYER_CONFIGS + bc.SMOKE_CONFIGS, ids=lambda c: c.key)
def test_zipf_loads_fill_every_config_within_the_per_expert_cap(cfg):
    loads = bc.zipf_loads(cfg.E, cfg.T * cfg.topk, cap=cfg.T, seed=0)
    assert len(loads) == cfg.E and sum(loads) == cfg.T * cfg.topk
    assert max(loads) <= cfg.T and min(loads) >= 0
    assert sum(1 for n in loads if n == 0) >= int(cfg.E * bc.ZIPF_EMPTY_FRACTION)


def test_zipf_loads_follow_the_ranks_when_no_expert_is_capped():
    E, total = 64, 100000
    loads = bc.zipf_loads(E, total, cap=total, seed=3, empty_fraction=0.0)
    # Loads sorted by size are 1/rank^1.2 of the total's share, to a row.
    norm = sum(1.0 / (r + 1) ** 1.2 for r in range(E))
    for rank, load in enumerate(sorted(loads, reverse=True)):
        assert abs(load - total / (rank + 1) ** 1.2 / norm) <= 1.0
    assert loads == bc.zipf_loads(E, total, cap=total, seed=3, empty_fraction=0.0), "a seed gives the same loads"
    assert loads != bc.zipf_loads(E, total, cap=total, seed=4, empty_fraction=0.0), "and another seed others"


def test_capped_experts_pass_their_excess_on_in_proportion():
    # 4 live experts (weights 1, 1/2^1.2, ...) and a cap that only the first exceeds.
    loads = bc.zipf_loads(4, 1000, cap=400, seed=0, empty_fraction=0.0)
    ranked = sorted(loads, reverse=True)
    assert ranked[0] == 400 and sum(loads) == 1000
    w = [1.0 / (r + 1) ** 1.2 for r in range(1, 4)]
    for load, wr in zip(ranked[1:], w):
        assert abs(load - 600 * wr / sum(w)) <= 1.0


def test_loads_that_cannot_fit_are_refused():
    with pytest.raises(ValueError, match="do not fit"):
        bc.zipf_loads(8, 8 * 10, cap=10, seed=0)  # a quarter empty: 6 experts of at most 10 rows


@pytest.mark.parametrize("cfg", bc.LAYER_CONFIGS + bc.SMOKE_CONFIGS, ids=lambda c: c.key)
def test_the_assignment_realises_the_loads_with_distinct_experts_per_token(cfg):
    loads = bc.zipf_loads(cfg.E, cfg.T * cfg.topk, cap=cfg.T, seed=1)
    choices = bc.assign_experts(loads, cfg.T, cfg.topk, seed=1)
    assert len(choices) == cfg.T
    assert all(len(set(c)) == cfg.topk for c in choices), "a token picks an expert at most once"
    counts = Counter(e for c in choices for e in c)
    assert [counts[e] for e in range(cfg.E)] == loads


def test_an_assignment_that_needs_a_token_twice_is_refused():
    with pytest.raises(ValueError, match="none above T"):
        bc.assign_experts([5, 1, 0], T=3, topk=2, seed=0)


def test_even_sizes_spread_the_extra_rows():
    assert bc.even_sizes(8192, 12) == [682, 683, 683] * 4
    decode = bc.even_sizes(8, 128)
    assert sum(decode) == 8 and [g for g, n in enumerate(decode) if n] == list(range(15, 128, 16))


def test_select_keeps_the_order_given_and_names_the_known_choices():
    assert bc.select("compile-fwd, eager-fwd", bc.MODES, "mode") == ["compile-fwd", "eager-fwd"]
    picked = bc.select("mixtral-8x7b,qwen3-30b-a3b", bc.LAYER_CONFIGS, "config")
    assert [c.model for c in picked] == ["Mixtral-8x7B", "Qwen3-30B-A3B"]
    with pytest.raises(ValueError, match="unknown config 'llama'.*known: qwen3-30b-a3b, deepseek-v3-ep8"):
        bc.select("llama", bc.LAYER_CONFIGS, "config")


def layer_row(config, mode, ratio, routing="router"):
    return {"config": config, "routing": routing, "mode": mode, "ratio": ratio}


def test_the_summary_is_a_geometric_mean_per_mode_and_the_slowest_row():
    rows = [layer_row("a", "eager-fwd", 2.0), layer_row("b", "eager-fwd", 0.5, "zipf"),
            layer_row("a", "compile-fwd", 1.2), layer_row("b", "compile-fwd", float("nan"))]
    geo, slowest = bc.ratio_summary(rows)
    assert geo["eager-fwd"] == (pytest.approx(1.0), 2)
    assert geo["compile-fwd"][0] == pytest.approx(1.2), "a row without a ratio does not count"
    assert slowest["config"] == "b" and slowest["ratio"] == 0.5
    lines = bc.summary_lines(rows)
    assert lines[0] == "geometric-mean torch/gemmops (eager-fwd): 1.000x over 2 rows"
    assert lines[-1] == "slowest row for gemmops: b zipf eager-fwd (0.500x)"


def test_an_error_is_one_line():
    assert bc.first_line(ValueError("no operator\nmore")) == "ValueError: no operator"
    assert bc.first_line(RuntimeError()) == "RuntimeError: "


def test_tables_align_and_blank_missing_numbers():
    assert bc.fmt(float("nan"), ".1f") == "" and bc.fmt(None, ".1f") == "" and bc.fmt(2.345, ".1f") == "2.3"
    text = bc.text_table(["name", "us"], [["seed", "12.5"], ["G=128", "7.0"]], left=1)
    assert text.splitlines() == ["name     us", "-----  ----", "seed   12.5", "G=128   7.0"]
    md = bc.markdown_table(["a", "b", "c"], [[1, 2, 3]], left=2)
    assert md == "| a | b | c |\n|---|---|---:|\n| 1 | 2 | 3 |\n"


def test_targets_and_medians():
    assert bc.meets(14.0, 15.0) == "yes" and bc.meets(16.0, 15.0) == "no" and bc.meets(math.nan, 15.0) == ""
    assert bc.meets(2.0, 1.0, kind="at least") == "yes"
    assert bc.median_per_call([1.0, 3.0, 2.0], calls=10) == pytest.approx(0.2)


# --- the benchmarks themselves, on the CPU at tiny sizes ---------------------------------------

@pytest.mark.torch
def test_the_layer_routes_gathers_and_scatters_back_like_a_per_token_loop():
    torch = pytest.importorskip("torch")
    import bench_layer
    T, E, H, I, topk = 12, 4, 16, 8, 2
    g = torch.Generator().manual_seed(0)
    def randn(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64)
    x, router_w, w_gate_up, w_down = randn(T, H), randn(E, H), randn(E, 2 * I, H), randn(E, H, I)

    def loop_mm(a, b, offs):  # a grouped mm by definition
        starts = [0] + offs.tolist()[:-1]
        return torch.cat([a[s:e] @ b[i] for i, (s, e) in enumerate(zip(starts, offs.tolist()))])

    loads = bc.zipf_loads(E, T * topk, cap=T, seed=0, empty_fraction=0.25)
    chosen = torch.tensor(bc.assign_experts(loads, T, topk, seed=0))
    zipf_bias = torch.zeros(T, E, dtype=torch.float64).scatter_(1, chosen, 2.0)
    for bias in (torch.zeros(T, E, dtype=torch.float64), zipf_bias):
        out = bench_layer.moe_layer(x, router_w, w_gate_up, w_down, bias, topk, loop_mm)
        probs = torch.softmax(x @ router_w.T, dim=-1)
        want = torch.zeros_like(x)
        for t in range(T):
            for e in torch.topk(probs[t] + bias[t], topk).indices.tolist():
                h = w_gate_up[e] @ x[t]
                want[t] += probs[t, e] * (w_down[e] @ (torch.nn.functional.silu(h[:I]) * h[I:]))
        torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)  # the softmax runs in float32
    experts, _ = bench_layer.route(x, router_w, zipf_bias, topk)
    assert [sorted(e) for e in experts.tolist()] == [sorted(c) for c in chosen.tolist()], "the bias forces the routing"


@pytest.mark.torch
def test_the_fused_layer_with_gemmops_router_matches_the_torch_router_on_the_cpu():
    torch = pytest.importorskip("torch")
    pytest.importorskip("gemmops.torch", reason="gemmops.torch needs torch")
    import bench_layer
    T, E, H, I, topk = 24, 6, 32, 16, 2
    g = torch.Generator().manual_seed(1)
    router = torch.nn.Linear(H, E, bias=False)
    with torch.no_grad():
        router.weight.copy_(torch.randn(E, H, generator=g))
    w_gate_up = (torch.randn(E, 2 * I, H, generator=g) / H ** 0.5).requires_grad_(True)
    w_down = (torch.randn(E, H, I, generator=g) / I ** 0.5).requires_grad_(True)
    x = torch.randn(T, H, generator=g).requires_grad_(True)
    bias = torch.zeros(T, E)
    results = []
    for router_kind in ("torch", "gemmops"):
        layer = bench_layer.FusedMoEExperts(router, w_gate_up, w_down, topk, router_kind=router_kind)
        out = layer(x, bias)
        results.append([out, *torch.autograd.grad(out.square().sum(), [x, router.weight, w_gate_up, w_down])])
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.torch
def test_the_layer_benchmark_times_the_gemmops_router_beside_the_fused_layer(tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("gemmops.torch", reason="gemmops.torch needs torch")
    import bench_layer
    md = tmp_path / "layer.md"
    assert bench_layer.main(["--device", "cpu", "--smoke", "--no-compile", "--router", "gemmops",
                             "--modes", "eager-fwd+bwd", "--markdown", str(md)]) == 0
    text = md.read_text()
    assert "fused, gemmops router ms" in text
    row = next(line for line in text.splitlines() if line.startswith("| ") and "eager-fwd+bwd" in line)
    assert "nan" not in row.split("|")[-2], row  # the router-routed layer was timed


@pytest.mark.torch
def test_the_layer_benchmark_runs_every_eager_path_on_the_cpu(tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("gemmops.torch", reason="gemmops.torch needs torch")
    import bench_layer
    md = tmp_path / "layer.md"
    assert bench_layer.main(["--device", "cpu", "--smoke", "--no-compile", "--markdown", str(md)]) == 0
    out = capsys.readouterr().out
    assert "geometric-mean torch/gemmops (eager-fwd)" in out and "slowest row for gemmops" in out
    # The fused layer (gemmops.torch.moe_experts) is checked against torch's and timed beside it.
    assert "fused vs torch, relative errors" in out and "CHECK FAILED" not in out
    assert "geometric-mean torch/fused (eager-fwd+bwd)" in out
    text = md.read_text()
    assert text.startswith("## MoE experts layer (bench/bench_layer.py)")
    rows = [line for line in text.splitlines() if line.startswith("| tiny")]
    assert len(rows) == 10, "tiny and tiny (biases): 2 routings x 2 modes each; tiny decode: 2 routings x forward"
    # gpt-oss's experts: the biases' gradients are checked too.
    assert "db_gate_up" in out and "db_down" in out


@pytest.mark.torch
def test_the_host_benchmark_runs_on_the_cpu(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("gemmops.torch", reason="gemmops.torch needs torch")
    import bench_host
    md = tmp_path / "host.md"
    assert bench_host.main(["--device", "cpu", "--smoke", "--problems", "tiny", "--markdown", str(md)]) == 0
    text = md.read_text()
    assert text.startswith("## Host cost per call (bench/bench_host.py)")
    assert "| tiny | G=4 TotalM=64 K=64 N=32 | get_operators(args) |" in text


@pytest.mark.torch
@pytest.mark.parametrize("script", ["bench_layer", "bench_host", "profile_layer", "bench_step_gemms", "bench_route"])
def test_without_a_cuda_device_the_benchmarks_say_so(script):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    module = __import__(script)
    with pytest.raises(SystemExit, match="needs a CUDA device; found none"):
        module.main([])


@pytest.mark.torch
def test_the_step_gemms_are_built_as_moe_experts_runs_them_and_each_is_served():
    # bench_step_gemms.py times every operator on the six products; on the CPU its arguments must at
    # least be valid ones that an operator serves and runs.
    torch = pytest.importorskip("torch")
    import gemmops as core
    import bench_step_gemms
    pieces = bench_step_gemms.step_gemm_arguments(bc.SMOKE_CONFIGS[0], torch.device("cpu"))
    assert list(pieces) == ["up", "down", "down dgrad", "dW2", "dW1", "up dgrad"]
    for name, (args, flops) in pieces.items():
        found = core.get_operators(args)
        assert found, f"{name}: no operator serves it"
        found[0].run(args)
        assert flops > 0


@pytest.mark.torch
def test_a_kernel_a_b_names_the_variants_whose_outputs_differ_in_any_bit():
    # bench_step_gemms.py --ab-defines runs each variant once before timing it and compares every
    # tensor the step's products write, bit for bit, against the build's: here the products are the
    # CPU operator's, one variant computes the same, one writes a different bit into one output.
    torch = pytest.importorskip("torch")
    import bench_step_gemms
    written = []
    pieces = bench_step_gemms.step_gemm_arguments(bc.SMOKE_CONFIGS[0], torch.device("cpu"), written=written)
    import gemmops as core
    args, _ = pieces["down"]
    op = core.get_operators(args)[0]
    down_out = written[2]  # up's out and pre-activation come first

    def flipped():
        op.run(args)
        down_out.view(torch.int16).view(-1)[0] ^= 1

    variants = {"as built": lambda: op.run(args), "same": lambda: op.run(args), "flipped": flipped}
    assert bench_step_gemms.variants_mismatched(variants, written) == ["flipped"]


@pytest.mark.torch
def test_a_cleared_a_b_tells_a_variant_that_writes_nothing():
    # bench_fp8.py --ab-defines clears out before each variant runs: a variant that writes nothing
    # would otherwise find the base's bits still there and pass.
    torch = pytest.importorskip("torch")
    out = torch.zeros(4, dtype=torch.int16)

    def write():
        out.fill_(3)

    variants = {"as built": write, "same": write, "silent": lambda: None}
    assert bc.variants_mismatched(variants, [out]) == []
    assert bc.variants_mismatched(variants, [out], clear=True) == ["silent"]


@pytest.mark.torch
def test_the_routing_benchmark_s_candidates_agree_on_the_cpu():
    # bench_route.py times three routings and checks them bitwise on the GPU; on the host all three
    # take the same counting sort, so its candidates must at least build and agree there.
    torch = pytest.importorskip("torch")
    import bench_route
    cfg = bc.LayerConfig("t", "t", 300, 16, 8, 8, 4, False)
    outs = {name: fn() for name, fn in bench_route.candidates(cfg, torch.device("cpu")).items()}
    assert bench_route.agree(outs)  # (the check main() prints)
    first = next(iter(outs))
    outs[first] = (outs[first][0] + 1,) + tuple(outs[first][1:])
    assert not bench_route.agree(outs)


@pytest.mark.torch
def test_the_profile_s_idle_gaps_are_the_device_s_time_between_activities():
    pytest.importorskip("torch")  # (profile_layer imports it)
    # profile_layer.py sums where the device waits between one step's kernels (launches, host time):
    # overlapping activities (another stream's copy) leave no gap, touching ones none either, and a
    # long one covers the short ones that start and end inside it.
    import profile_layer
    in_order = [("a", 0, 10), ("b", 15, 40), ("c", 30, 45), ("d", 45, 50), ("e", 60, 100), ("f", 70, 80),
                ("g", 90, 95), ("h", 103, 110)]
    count, idle, gaps = profile_layer.idle_gaps(in_order)
    assert (count, idle) == (8, 18)
    assert gaps == [(10, "d", "e"), (5, "a", "b"), (3, "e", "h")]


@pytest.mark.torch
def test_a_kernel_define_s_step_gets_plans_of_its_own(monkeypatch):
    # bench_layer --ab-defines times the fused layer with GEMMOPS_KERNEL_DEFINES set around its calls:
    # the plans (and so the kernels) made under a value must not serve another, grouped_mm's and the
    # fused pieces' alike.
    torch = pytest.importorskip("torch")
    import gemmops.torch as gt
    from gemmops.torch import _forward, _fused
    monkeypatch.delenv("GEMMOPS_KERNEL_DEFINES", raising=False)
    a, b = torch.randn(8, 16).bfloat16(), torch.randn(2, 16, 8).bfloat16()
    offs = torch.tensor([3, 8], dtype=torch.int32)
    gt.grouped_mm(a, b, offs)
    calls, key = len(_forward._calls), _fused._plan_key(("piece",))
    monkeypatch.setenv("GEMMOPS_KERNEL_DEFINES", "GEMMOPS_SOME_DEFINE")
    gt.grouped_mm(a, b, offs)
    assert len(_forward._calls) == calls + 1
    assert _fused._plan_key(("piece",)) != key
