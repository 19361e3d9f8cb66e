#!/usr/bin/env python3
# bench/bench_layer.py: a whole MoE experts layer, as PyTorch users write it, with torch._grouped_mm and
# with gemmops.torch.grouped_mm (the rest of the layer identical), timed in one process on one GPU.
# SPDX-License-Identifier: Apache-2.0
"""MoE experts layer benchmark: torch._grouped_mm against gemmops.torch.grouped_mm.

    python3 bench/bench_layer.py [--configs qwen3-30b-a3b,mixtral-8x7b] [--modes eager-fwd,compile-fwd+bwd]
                                 [--routings router,zipf] [--iters 20] [--repeats 5] [--no-compile]
                                 [--markdown layer.md] [--peers]
    python3 bench/bench_layer.py --device cpu --smoke     # the code paths at tiny sizes, no GPU

The layer: router (linear to E logits), softmax + top-k, argsort of the flattened expert ids, gather
of the token rows, per-expert counts and their cumsum into int32 offsets on the device (no host
sync), gate/up grouped mm with a fused (E, 2I, H) weight used K-major (w.transpose(-2, -1)), SwiGLU,
down grouped mm with an (E, H, I) weight used the same way, routing weights, index_add back into
token order. Router rows route with random router weights (near-uniform loads); Zipf rows use a
fixed assignment whose expert loads follow Zipf (exponent 1.2, a quarter of the experts empty),
forced through the top-k by a selection bias added to the probabilities, so that both
implementations do the same work and run the same graph as the router rows.

Timing as users feel it: CUDA events around --iters back-to-back iterations (host overhead
included, no CUDA graph, no sync inside), the implementations timed in turn (the same kernel moves
by up to 13% between processes), median of --repeats. Forward modes run under torch.no_grad();
forward+backward takes the gradient of a random upstream gradient into x and every weight. Peak
memory: torch.cuda.max_memory_allocated over the loop, above what was allocated before it.
"""
import argparse
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import (LAYER_CONFIGS, MODES, ROUTINGS, SMOKE_CONFIGS, assign_experts, device_or_exit,  # noqa: E402
                          build_description, first_line, fmt, geometric_mean, layer_gemm_flops, markdown_table,
                          padded, select, summary_lines, text_table, wait_or_exit, zipf_loads)
from bench_grouped import with_env  # noqa: E402

NO_DEVICE = "bench_layer.py needs a CUDA device; found none (--device cpu --smoke runs its code paths on the CPU)"
# bench_layer --ab-defines times this define first: no kernel reads it, so its kernels are the build's
# compiled apart, and its ratio is what the A/B method itself does to a step (v31: every variant of
# five ran 5-8% slower than the fused layer at the layer while the pieces timed level or faster).
AB_CONTROL = "GEMMOPS_AB_CONTROL"
CHECK_LIMIT = 2e-2  # relative error of bf16 outputs and gradients against torch's; above it the row is flagged
HANG_SECONDS = 600  # a first call (compiles included) still running after this is stuck


# --- the layer ---------------------------------------------------------------------------------

def route(x, router_w, selection_bias, topk):
    """(T, topk) expert ids and their routing weights: softmax over all experts, then top-k; the
    selection bias (zero, or 2 on forced experts) moves the choice, never the weights."""
    probs = F.softmax(F.linear(x, router_w), dim=-1, dtype=torch.float32)  # (T, E)
    _, experts = torch.topk(probs + selection_bias, topk, dim=-1)
    return experts, probs.gather(1, experts).to(x.dtype)


def gpt_oss_gate(h, alpha=1.702, limit=7.0):
    """gpt-oss's activation: interleaved (gate, up) pairs, clamped SwiGLU."""
    gate, up = h[:, 0::2].clamp(max=limit), h[:, 1::2].clamp(-limit, limit)
    return (up + 1) * gate * torch.sigmoid(gate * alpha)


def moe_layer(x, router_w, w_gate_up, w_down, selection_bias, topk, mm, b_gate_up=None, b_down=None):
    """The MoE experts layer with `mm` as its grouped mm (torch._grouped_mm's positional form). With
    biases, gpt-oss's experts: each projection's bias added per row's expert, its own gate."""
    E, I = w_gate_up.shape[0], w_down.shape[-1]
    experts, weights = route(x, router_w, selection_bias, topk)
    flat = experts.reshape(-1)
    order = torch.argsort(flat, stable=True)
    token = order // topk  # the token of each sorted row
    counts = torch.zeros(E, dtype=torch.int32, device=x.device).scatter_add_(
        0, flat, torch.ones_like(flat, dtype=torch.int32))  # not bincount: it reads its size on the host
    offs = torch.cumsum(counts, 0, dtype=torch.int32)
    h = mm(x[token], w_gate_up.transpose(-2, -1), offs)  # (T*topk, 2I): gate, then up (gpt-oss: interleaved)
    if b_gate_up is not None:
        expert = flat[order]
        h = h + b_gate_up[expert]
        a = gpt_oss_gate(h)
    else:
        a = F.silu(h[:, :I]) * h[:, I:]
    y = mm(a, w_down.transpose(-2, -1), offs)  # (T*topk, H)
    if b_down is not None:
        y = y + b_down[flat[order]]
    y = y * weights.reshape(-1)[order].unsqueeze(-1)
    return torch.zeros_like(x).index_add(0, token, y)


class MoEExperts(torch.nn.Module):
    """The layer's parameters as MoE models store them; instances may share them (one per mm)."""

    def __init__(self, router, w_gate_up, w_down, topk, mm, biases=(None, None)):
        super().__init__()
        self.router, self.w_gate_up, self.w_down, self.topk, self.mm = router, w_gate_up, w_down, topk, mm
        self.b_gate_up, self.b_down = biases

    def forward(self, x, selection_bias):
        return moe_layer(x, self.router.weight, self.w_gate_up, self.w_down, selection_bias, self.topk, self.mm,
                         self.b_gate_up, self.b_down)


class FusedMoEExperts(torch.nn.Module):
    """The same layer through gemmops.torch.moe_experts: six grouped GEMMs a step, SwiGLU and the routing
    weights in their epilogues (the pre-activation kept for the backward, nothing recomputed), the
    token rows gathered by the kernels where an operator serves it, a fixed-order combine."""

    def __init__(self, router, w_gate_up, w_down, topk, biases=(None, None), router_kind="torch"):
        super().__init__()
        self.router, self.w_gate_up, self.w_down, self.topk = router, w_gate_up, w_down, topk
        self.b_gate_up, self.b_down = biases
        self.router_kind = router_kind

    def forward(self, x, selection_bias):
        import gemmops.torch
        if self.router_kind == "gemmops":  # the router's softmax and top-k in one kernel (its backward too)
            experts, weights = gemmops.torch.router_topk(F.linear(x, self.router.weight), self.topk,
                                                         selection_bias=selection_bias)
        else:
            experts, weights = route(x, self.router.weight, selection_bias, self.topk)
        if self.b_gate_up is not None:  # gpt-oss's experts
            return gemmops.torch.moe_experts(x, experts, weights, self.w_gate_up.transpose(-2, -1),
                                             self.w_down.transpose(-2, -1), "swiglu_oss", "interleaved",
                                             b_gate_up=self.b_gate_up, b_down=self.b_down)
        return gemmops.torch.moe_experts(x, experts, weights, self.w_gate_up.transpose(-2, -1),
                                         self.w_down.transpose(-2, -1), "swiglu")


def make_parameters(cfg, device, seed):
    """Router and expert weights scaled so activations stay near unit size (bf16 errors meaningful)."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    def randn(*shape, std):
        return (torch.randn(*shape, generator=g) * std).to(device=device, dtype=torch.bfloat16)
    router = torch.nn.Linear(cfg.H, cfg.E, bias=False, device=device, dtype=torch.bfloat16)
    with torch.no_grad():
        router.weight.copy_(randn(cfg.E, cfg.H, std=cfg.H ** -0.5))
    w_gate_up = torch.nn.Parameter(randn(cfg.E, 2 * cfg.I, cfg.H, std=cfg.H ** -0.5))
    w_down = torch.nn.Parameter(randn(cfg.E, cfg.H, cfg.I, std=cfg.I ** -0.5))
    x = randn(cfg.T, cfg.H, std=1.0).requires_grad_()
    grad_out = randn(cfg.T, cfg.H, std=1.0)
    return router, w_gate_up, w_down, x, grad_out


def make_biases(cfg, device, seed):
    """(b_gate_up (E, 2I), b_down (E, H)) for a config with biases (gpt-oss's experts), else (None, None)."""
    if not cfg.biases:
        return None, None
    g = torch.Generator(device="cpu").manual_seed(seed + 7)
    return tuple(torch.nn.Parameter((torch.randn(*shape, generator=g) * 0.1).to(device=device, dtype=torch.bfloat16))
                 for shape in ((cfg.E, 2 * cfg.I), (cfg.E, cfg.H)))


def zipf_selection_bias(cfg, device, seed):
    """A (T, E) bias of 2 on each token's assigned experts (probabilities are at most 1, so top-k
    picks exactly them) and the expert loads it realises."""
    loads = zipf_loads(cfg.E, cfg.T * cfg.topk, cap=cfg.T, seed=seed)
    chosen = torch.tensor(assign_experts(loads, cfg.T, cfg.topk, seed), dtype=torch.int64)
    bias = torch.zeros(cfg.T, cfg.E).scatter_(1, chosen, 2.0)
    return bias.to(device), loads


# --- SonicMoE, only when importable ------------------------------------------------------------

def sonic_layer_function():
    """SonicMoE's fused softmax-top-k layer, or None (never required)."""
    try:
        import sonicmoe
        fn = getattr(sonicmoe, "moe_TC_softmax_topk_layer", None)
        if fn is None:
            from sonicmoe.functional import moe_TC_softmax_topk_layer as fn
        return fn
    except Exception as e:  # any import failure means: no peer column
        print(f"SonicMoE not importable ({first_line(e, 100)}); no peer column")
        return None


class SonicLayer:
    """Our weights in SonicMoE's layout: w1 (2I, H, E) with gate and up rows interleaved, w2 (H, I, E).
    It routes as the router rows do (softmax over all experts, then top-k, weights not renormalised)."""

    def __init__(self, fn, router, w_gate_up, w_down, topk):
        I = w_down.shape[-1]
        with torch.no_grad():
            inter = torch.stack([w_gate_up[:, :I], w_gate_up[:, I:]], dim=2).reshape(w_gate_up.shape)
        self.fn, self.router_w, self.topk = fn, router.weight, topk
        self.w1 = inter.detach().clone().requires_grad_()  # leaves, so their gradients are computed
        self.w2 = w_down.detach().clone().requires_grad_()

    def __call__(self, x, inference):
        out = self.fn(x, self.router_w, self.w1.permute(1, 2, 0), None, self.w2.permute(1, 2, 0), None, self.topk,
                      torch.cuda.current_stream().cuda_stream, "swiglu", inference,
                      is_softmax_over_topk=False, norm_topk_probs=False)
        return out[0] if isinstance(out, (tuple, list)) else out

    def step(self, x, grad_out, backward):
        """One iteration, as step() does for our layers."""
        if not backward:
            with torch.no_grad():
                return self(x, True)
        return gradients(self(x, False), [x, self.router_w, self.w1, self.w2], grad_out)


# --- timing ------------------------------------------------------------------------------------

class Clock:
    """Seconds per iteration of a loop: CUDA events around it on a GPU, perf_counter on the CPU."""

    def __init__(self, device):
        self.cuda = device.type == "cuda"

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def loop(self, fn, iters):
        """(seconds per iteration, peak bytes above what was allocated before the loop, host seconds per
        iteration). The host's: until the loop has queued its last launch (no synchronisation inside),
        so where it comes near the first, the step is bound by its host work, not by its kernels."""
        self.sync()
        if not self.cuda:
            t0 = time.perf_counter()
            for _ in range(iters):
                fn()
            seconds = (time.perf_counter() - t0) / iters
            return seconds, float("nan"), seconds
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        end.record()
        host = (time.perf_counter() - t0) / iters
        end.synchronize()
        return start.elapsed_time(end) / 1e3 / iters, float(torch.cuda.max_memory_allocated() - base), host

    def wait_or_exit(self, name):
        """Waits for a first call; a stuck kernel cannot be cancelled, so one is reported, not waited on."""
        if self.cuda:
            wait_or_exit(name, HANG_SECONDS)


def interleaved(clock, fns, iters, repeats, warmup, hosts=None):
    """Median seconds per iteration and the largest peak bytes of each variant, timed in turn (each
    repeat from another variant on); `hosts` (a dict) gets each variant's median host seconds per
    iteration (Clock.loop)."""
    for name, fn in fns.items():
        for _ in range(max(1, warmup)):
            fn()
        clock.wait_or_exit(name)
    times = {name: [] for name in fns}
    host_times = {name: [] for name in fns}
    peaks = {name: float("nan") for name in fns}
    names = list(fns)
    step = max(1, len(names) // max(1, repeats))
    for r in range(repeats):
        # Each repeat starts at another variant, so none always runs right after the same one (what
        # ran before a loop, e.g. a lighter one, can move the clocks the loop runs at).
        start = (r * step) % len(names)
        for name in names[start:] + names[:start]:
            fn = fns[name]
            t, peak, host = clock.loop(fn, iters)
            times[name].append(t)
            host_times[name].append(host)
            peaks[name] = peak if math.isnan(peaks[name]) else max(peaks[name], peak)
    if hosts is not None:
        hosts.update({name: statistics.median(h) for name, h in host_times.items()})
    return {name: statistics.median(t) for name, t in times.items()}, peaks


# --- one config --------------------------------------------------------------------------------

def rel_err(got, want):
    want = want.float()
    return ((got.float() - want).norm() / want.norm().clamp_min(1e-30)).item()


# How a forward+backward step gets its gradients: "accumulate" (the default) as training does,
# out.backward() into each leaf's .grad, where autograd copies a gradient whose strides are not the
# weight's into the weight's layout; "autograd": torch.autograd.grad's results as the ops return them.
GRADS = "accumulate"


def gradients(out, leaves, grad_out):
    """The leaves' gradients of out for grad_out, the GRADS way; .grad is left as it was (None)."""
    if GRADS == "autograd":
        return torch.autograd.grad(out, leaves, grad_out)
    out.backward(grad_out)
    grads = [leaf.grad for leaf in leaves]
    for leaf in leaves:  # freed with the caller's list: the next step's peak starts without them
        leaf.grad = None
    return grads


def step(layer, x, bias, grad_out, leaves, backward):
    """One iteration: the forward under no_grad, or forward and the gradients into every leaf."""
    if not backward:
        with torch.no_grad():
            return layer(x, bias)
    out = layer(x, bias)
    return gradients(out, leaves, grad_out)


CHECKED = ["out", "dx", "drouter", "dw_gate_up", "dw_down", "db_gate_up", "db_down"]  # (biases: when the layer has them)


def results(layer, x, bias, grad_out, leaves, backward):
    """[out] of one forward, or [out, *gradients of the leaves] of one forward and backward."""
    if not backward:
        with torch.no_grad():
            return [layer(x, bias)]
    out = layer(x, bias)
    return [out, *torch.autograd.grad(out, leaves, grad_out)]


def check(layers, x, bias, grad_out, leaves, backward, name="gemmops"):
    """Relative errors of layer `name`'s output (and gradients) against torch's, by name: the layers
    are the eager ones or the compiled ones, called as the timed steps call them (no other graph)."""
    want = results(layers["torch"], x, bias, grad_out, leaves, backward)
    got = results(layers[name], x, bias, grad_out, leaves, backward)
    return {name: rel_err(g, w) for name, g, w in zip(CHECKED, got, want)}


def differing_with_defines(layer, base, defines, x, bias, grad_out, leaves, backward):
    """The names of the output and gradients that differ in any bit from `base` (results() of the layer
    as built) when layer's kernels are compiled with `defines` (GEMMOPS_KERNEL_DEFINES): a kernel define
    that changes no arithmetic changes none."""
    variant = with_env(lambda: results(layer, x, bias, grad_out, leaves, backward), "GEMMOPS_KERNEL_DEFINES", defines)()
    return [n for n, b, v in zip(CHECKED, base, variant) if not torch.equal(b, v)]


def check_line(what, errors, name="gemmops"):
    flag = "  CHECK FAILED" if not max(errors.values()) <= CHECK_LIMIT else ""
    return f"{what}: {name} vs torch, relative errors: " + ", ".join(f"{n} {e:.1e}" for n, e in errors.items()) + flag


def bench_config(cfg, a, clock, device, compiled, sonic_fn):
    rows = []
    router, w_gate_up, w_down, x, grad_out = make_parameters(cfg, device, a.seed)
    biases = make_biases(cfg, device, a.seed)
    leaves = [x, router.weight, w_gate_up, w_down] + [b for b in biases if b is not None]
    impls = {"torch": torch._grouped_mm, "gemmops": gemmops_grouped_mm()}
    layers = {name: MoEExperts(router, w_gate_up, w_down, cfg.topk, mm, biases) for name, mm in impls.items()}
    if a.fused:
        layers["fused"] = FusedMoEExperts(router, w_gate_up, w_down, cfg.topk, biases)
        if a.router == "gemmops":  # the same fused layer routed by gemmops.router_topk, in the same round-robin
            layers["fused_router"] = FusedMoEExperts(router, w_gate_up, w_down, cfg.topk, biases, "gemmops")
    compiled_layers = {name: compiled(layer) for name, layer in layers.items()} if compiled else {}
    # --autotuned: the fused layer again, each piece's design chosen by timing (GEMMOPS_AUTOTUNE=1 around
    # its calls; its plans are kept apart from the ranking's), eager only.
    tuned = FusedMoEExperts(router, w_gate_up, w_down, cfg.topk, biases) if a.fused and a.autotuned else None
    # SonicMoE has no expert biases: no column for such a layer.
    sonic = SonicLayer(sonic_fn, router, w_gate_up, w_down, cfg.topk) if sonic_fn is not None and not cfg.biases \
        else None
    modes = [m for m in a.modes if not (cfg.forward_only and m.endswith("+bwd"))]
    modes = [m for m in modes if compiled or not m.startswith("compile")]
    for routing in a.routings:
        if routing == "zipf":
            bias, loads = zipf_selection_bias(cfg, device, a.seed)
            print(f"{cfg.model} zipf loads: max {max(loads)}, min nonzero {min(l for l in loads if l)}, "
                  f"{sum(1 for l in loads if not l)} of {cfg.E} experts empty", flush=True)
        else:
            bias = torch.zeros(cfg.T, cfg.E, device=device)
        errors = check(layers, x, bias, grad_out, leaves, backward=not cfg.forward_only)
        print(check_line(f"{cfg.model} {routing} eager", errors), flush=True)
        fused_errors = {}
        if a.fused:
            fused_errors = check(layers, x, bias, grad_out, leaves, not cfg.forward_only, "fused")
            print(check_line(f"{cfg.model} {routing} eager (fused)", fused_errors, "fused"), flush=True)
            built = results(layers["fused"], x, bias, grad_out, leaves, not cfg.forward_only) if a.ab_defines else None
            for defines in a.ab_defines:
                differ = differing_with_defines(layers["fused"], built, defines, x, bias, grad_out, leaves,
                                                not cfg.forward_only)
                print(f"{cfg.model} {routing} eager (fused with {defines}): "
                      + (f"DIFFERS from the fused layer in {', '.join(differ)}" if differ else
                         "output and gradients bitwise equal to the fused layer's"), flush=True)
        sonic_err = float("nan")
        if sonic is not None and routing == "router":
            try:
                with torch.no_grad():
                    sonic_err = rel_err(sonic.step(x, grad_out, False), layers["torch"](x, bias))
                print(f"{cfg.model} router: SonicMoE vs torch, relative error of the output: {sonic_err:.1e}",
                      flush=True)
            except Exception as e:  # a config it does not support loses the column, nothing else
                print(f"{cfg.model}: SonicMoE refused: {first_line(e)}", flush=True)
                sonic = None
        for mode in modes:
            backward = mode.endswith("+bwd")
            chosen = compiled_layers if mode.startswith("compile") else layers
            fns = {name: (lambda l=l: step(l, x, bias, grad_out, leaves, backward)) for name, l in chosen.items()}
            if tuned is not None and mode.startswith("eager"):
                fns["fused_tuned"] = with_env(lambda: step(tuned, x, bias, grad_out, leaves, backward),
                                              "GEMMOPS_AUTOTUNE", "1")
            if sonic is not None and routing == "router" and mode.startswith("eager"):
                fns["sonic"] = lambda: sonic.step(x, grad_out, backward)
            if a.fused and mode.startswith("eager"):  # the fused layer's kernels compiled with each variant
                for defines in a.ab_defines:
                    fns["fused with " + defines] = with_env(
                        lambda l=layers["fused"]: step(l, x, bias, grad_out, leaves, backward),
                        "GEMMOPS_KERNEL_DEFINES", defines)
            hosts = {}
            try:
                t, peak = interleaved(clock, fns, a.iters, a.repeats, a.warmup, hosts)
            except Exception as e:  # a failing row is reported, the others still run
                print(f"{cfg.model} {routing} {mode} FAILED: {first_line(e)}", flush=True)
                continue
            for defines in a.ab_defines:
                name = "fused with " + defines
                if name in t:
                    print(f"  {cfg.model} {routing} {mode}: fused {t['fused'] * 1e3:.3f} ms, {name} "
                          f"{t[name] * 1e3:.3f} ms (fused / with: {t['fused'] / t[name]:.3f})", flush=True)
            if clock.cuda:  # a variant whose host time nears its time is bound by its host work
                print(f"  {cfg.model} {routing} {mode}: host ms an iteration (to its last launch) "
                      + ", ".join(f"{name} {hosts[name] * 1e3:.3f} of {t[name] * 1e3:.3f}" for name in fns), flush=True)
            err = max(errors.values())
            fused_err = max(fused_errors.values()) if fused_errors else float("nan")
            if mode.startswith("compile"):  # compiled by the warm-up; checked as it runs
                compiled_errors = check(chosen, x, bias, grad_out, leaves, backward)
                err = max(compiled_errors.values())
                print(check_line(f"{cfg.model} {routing} {mode}", compiled_errors), flush=True)
                if "fused" in chosen:
                    fused_err = max(check(chosen, x, bias, grad_out, leaves, backward, "fused").values())
            flops = layer_gemm_flops(cfg.T, cfg.topk, cfg.H, cfg.I, backward=backward)
            r = {"config": cfg.model, "key": cfg.key, "routing": routing, "mode": mode,
                 "torch_ms": t["torch"] * 1e3, "gemmops_ms": t["gemmops"] * 1e3, "ratio": t["torch"] / t["gemmops"],
                 "torch_tflops": flops / t["torch"] / 1e12, "gemmops_tflops": flops / t["gemmops"] / 1e12,
                 "torch_peak_mib": peak["torch"] / 2**20, "gemmops_peak_mib": peak["gemmops"] / 2**20,
                 "err": err, "sonic_ms": t["sonic"] * 1e3 if "sonic" in t else float("nan"), "sonic_err": sonic_err,
                 "sonic_peak_mib": peak["sonic"] / 2**20 if "sonic" in peak else float("nan"),
                 "fused_ms": t["fused"] * 1e3 if "fused" in t else float("nan"),
                 "fused_ratio": t["torch"] / t["fused"] if "fused" in t else float("nan"),
                 "fused_peak_mib": peak["fused"] / 2**20 if "fused" in peak else float("nan"), "fused_err": fused_err,
                 "fused_router_ms": t["fused_router"] * 1e3 if "fused_router" in t else float("nan"),
                 "fused_tuned_ms": t["fused_tuned"] * 1e3 if "fused_tuned" in t else float("nan")}
            rows.append(r)
            print("  " + padded(row_cells(r, sonic_fn is not None, a.fused, a.router == "gemmops", a.autotuned),
                                PROGRESS_WIDTHS, left=3), flush=True)
    return rows


def gemmops_grouped_mm():
    import gemmops.torch
    return gemmops.torch.grouped_mm


# --- output ------------------------------------------------------------------------------------

HEADERS = ["config", "routing", "mode", "torch ms", "gemmops ms", "torch/gemmops", "torch TFLOP/s",
           "gemmops TFLOP/s", "torch peak MiB", "gemmops peak MiB", "rel err"]


PROGRESS_WIDTHS = [22, 6, 15] + [10] * 14  # the rows as they finish; the table printed last is aligned to fit


FUSED_HEADERS = ["fused ms", "torch/fused", "fused peak MiB", "fused rel err"]
# SonicMoE's peak as ours: max_memory_allocated over its loop above what was allocated before it (its
# own copies of the weights, made once, are not in it; the gradients it makes each step are).
PEER_HEADERS = ["SonicMoE ms", "SonicMoE peak MiB"]


def fused_headers(a):
    """The fused layer's columns, and the router_topk-routed one's with --router gemmops."""
    if not a.fused:
        return []
    return FUSED_HEADERS + (["fused, gemmops router ms"] if a.router == "gemmops" else []) + \
        (["fused autotuned ms"] if a.autotuned else [])


def row_cells(r, peers, fused=False, router=False, autotuned=False):
    cells = [r["config"], r["routing"], r["mode"], fmt(r["torch_ms"], ".3f"), fmt(r["gemmops_ms"], ".3f"),
             fmt(r["ratio"], ".3f"), fmt(r["torch_tflops"], ".0f"), fmt(r["gemmops_tflops"], ".0f"),
             fmt(r["torch_peak_mib"], ".0f"), fmt(r["gemmops_peak_mib"], ".0f"), fmt(r["err"], ".1e")]
    if fused:
        cells += [fmt(r["fused_ms"], ".3f"), fmt(r["fused_ratio"], ".3f"), fmt(r["fused_peak_mib"], ".0f"),
                  fmt(r["fused_err"], ".1e")] + ([fmt(r.get("fused_router_ms", float("nan")), ".3f")] if router else []) + \
            ([fmt(r.get("fused_tuned_ms", float("nan")), ".3f")] if autotuned else [])
    return cells + ([fmt(r["sonic_ms"], ".3f"), fmt(r.get("sonic_peak_mib", float("nan")), ".0f")] if peers else [])


def fused_lines(rows):
    """torch/fused per mode (geometric mean): the fused layer's speed-up over the torch layer."""
    rows = [r for r in rows if not math.isnan(r["fused_ms"])]
    modes = sorted({r["mode"] for r in rows}, key=MODES.index)
    return [f"geometric-mean torch/fused ({m}): "
            f"{geometric_mean([r['fused_ratio'] for r in rows if r['mode'] == m]):.3f}x over "
            f"{sum(1 for r in rows if r['mode'] == m)} rows (gemmops.torch.moe_experts)" for m in modes]


def peer_lines(rows):
    """SonicMoE's fused step against ours (moe_experts; the grouped-mm layer where the fused one was not
    timed): the comparison of two fused layers, not of SonicMoE's against a layer of torch ops."""
    rows = [r for r in rows if not math.isnan(r["sonic_ms"])]
    modes = sorted({r["mode"] for r in rows}, key=MODES.index)
    lines = []
    for m in modes:
        mine = [r for r in rows if r["mode"] == m]
        fused = all(not math.isnan(r["fused_ms"]) for r in mine)
        ours = "fused_ms" if fused else "gemmops_ms"
        lines.append(f"geometric-mean SonicMoE/{'fused' if fused else 'gemmops'} ({m}): "
                     f"{geometric_mean([r['sonic_ms'] / r[ours] for r in mine]):.3f}x over {len(mine)} rows "
                     f"(above 1: gemmops faster)")
    return lines


def markdown_section(rows, a, device_name, peers):
    geo_lines = summary_lines(rows) + (fused_lines(rows) if a.fused else []) + (peer_lines(rows) if peers else [])
    text = ("## MoE experts layer (bench/bench_layer.py)\n\n"
            "The whole layer as PyTorch users write it, once with torch._grouped_mm and once with "
            "gemmops.torch.grouped_mm, everything else identical: router, softmax + top-k, argsort of the expert "
            "ids, gather, int32 offsets by cumsum on the device, gate/up grouped mm over a fused (E, 2I, H) weight "
            "used K-major, SwiGLU, down grouped mm, routing weights, index_add back into token order. "
            f"bf16; {device_name}; torch {torch.__version__}; {build_description()}. "
            f"Wall time per iteration of {a.iters} back-to-back iterations (CUDA events around the loop, host "
            f"overhead included, no CUDA graph), median of {a.repeats} repeats, the implementations timed in turn. "
            "Forward modes run under torch.no_grad(); forward+backward computes the gradients of a random upstream "
            "gradient into x and every weight" + (
                " as training does: out.backward() into each leaf's .grad (autograd copies a gradient whose "
                "strides are not its weight's into the weight's layout), cleared after each step"
                if a.grads == "accumulate" else " by torch.autograd.grad, as the ops return them") +
            ". Compiled modes: torch.compile(dynamic=False), default mode, timed after warm-up. *router* rows "
            "route with random router weights (near-uniform loads); *zipf* rows use a "
            "fixed assignment with Zipf loads (exponent 1.2, a quarter of the experts empty) forced through the "
            "top-k by a selection bias. TFLOP/s counts the two grouped GEMMs only (forward 6·T·k·H·I, "
            "forward+backward three times that); peak MiB is max_memory_allocated over the loop above what was "
            "allocated before it; rel err is gemmops's largest relative error against torch over the output and "
            "gradients (eager rows: of the eager forward and backward; compiled rows: of the compiled step "
            "timed). Generated by bench/bench_layer.py.\n\n")
    text += "".join(f"- {line}\n" for line in geo_lines) + "\n"
    headers = HEADERS + fused_headers(a) + (PEER_HEADERS if peers else [])
    text += markdown_table(headers, [row_cells(r, peers, a.fused, a.router == "gemmops", a.autotuned) for r in rows], left=3)
    return text


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", default="", help="comma-separated subset of: " +
                    ", ".join(c.key for c in LAYER_CONFIGS) + " (default: all)")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated subset of: " + ", ".join(MODES))
    ap.add_argument("--routings", default=",".join(ROUTINGS), help="comma-separated subset of: " + ", ".join(ROUTINGS))
    ap.add_argument("--iters", type=int, default=20, help="back-to-back iterations inside one timing")
    ap.add_argument("--repeats", type=int, default=5, help="timings per variant (the median is reported)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed iterations per variant first (compiles included)")
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile modes")
    ap.add_argument("--markdown", help="write the BENCHMARKS.md section to this file")
    ap.add_argument("--peers", action="store_true", help="also time SonicMoE's fused layer, when importable")
    ap.add_argument("--no-fused", dest="fused", action="store_false",
                    help="skip the fused layer (gemmops.torch.moe_experts)")
    ap.add_argument("--grads", choices=["accumulate", "autograd"], default="accumulate",
                    help="forward+backward: gradients into each leaf's .grad as training does (accumulate: a "
                         "gradient in another layout than its weight's is copied), or torch.autograd.grad's as returned")
    ap.add_argument("--router", choices=["torch", "gemmops"], default="torch",
                    help="gemmops: also time the fused layer routed by gemmops.torch.router_topk (one kernel each "
                         "way) beside the one routed by torch's softmax and topk, in the same round-robin (its "
                         "column: fused, gemmops router ms)")
    ap.add_argument("--autotuned", action="store_true",
                    help="also time the fused layer with each piece's design chosen by timing (GEMMOPS_AUTOTUNE=1 "
                         "around its calls), eager, in the same round-robin (its column: fused autotuned ms; with "
                         "GEMMOPS_TRIAL_DESIGNS=1 set for the run, trial designs are timed too)")
    ap.add_argument("--ab-defines", default="",
                    help="kernel A/B at the layer: the fused layer again with its kernels compiled with these "
                         "GEMMOPS_KERNEL_DEFINES (set around its calls; its plans are kept apart), eager, in the same "
                         "round-robin; several variants separated by '|', each printed against the fused layer, "
                         "after an A/A control (" + AB_CONTROL + ", which no kernel reads)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu (with --smoke: the code paths, tiny sizes)")
    ap.add_argument("--smoke", action="store_true", help="tiny configs and few iterations (a quick run of every path)")
    a = ap.parse_args(argv)
    configs = SMOKE_CONFIGS if a.smoke else LAYER_CONFIGS
    a.configs = select(a.configs, configs, "config") if a.configs else list(configs)
    a.modes = select(a.modes, MODES, "mode")
    a.routings = select(a.routings, ROUTINGS, "routing")
    a.ab_defines = [v.strip() for v in a.ab_defines.split("|") if v.strip()]
    if a.ab_defines:  # first an A/A control: a define no kernel reads, compiled and timed the same way
        a.ab_defines = [AB_CONTROL] + [v for v in a.ab_defines if v != AB_CONTROL]
    if a.smoke:
        a.iters, a.repeats, a.warmup = min(a.iters, 2), min(a.repeats, 2), min(a.warmup, 1)
    return a


def main(argv=None):
    a = parse_args(argv)
    global GRADS
    GRADS = a.grads
    device = device_or_exit(a.device, NO_DEVICE)
    if device is None:
        return 0
    gemmops_grouped_mm()  # fails here, clearly, when gemmops.torch is missing
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"bench_layer.py: {device_name}; torch {torch.__version__}; {build_description()}; "
          f"{a.iters} iterations x {a.repeats} repeats", flush=True)
    compiled = None
    if not a.no_compile and any(m.startswith("compile") for m in a.modes):
        # One compiled layer per implementation and config; with the grad modes, four compilations of
        # the same forward per config (dynamo's cache is reset between configs: within its limit of 8).
        compiled = lambda layer: torch.compile(layer, dynamic=False)
    sonic_fn = sonic_layer_function() if a.peers and device.type == "cuda" else None
    clock = Clock(device)
    rows = []
    for cfg in a.configs:
        print(f"{cfg.model}: T={cfg.T} E={cfg.E} H={cfg.H} I={cfg.I} top-{cfg.topk}", flush=True)
        rows += bench_config(cfg, a, clock, device, compiled, sonic_fn)
        if a.markdown and rows:  # after every config: a cut-short run still leaves its numbers
            with open(a.markdown, "w") as f:
                f.write(markdown_section(rows, a, device_name, sonic_fn is not None))
        if compiled is not None:
            torch._dynamo.reset()  # the config's compiled graphs hold its weights; no later config reuses them
        if device.type == "cuda":
            torch.cuda.empty_cache()
    failed = any(not r["err"] <= CHECK_LIMIT or r["fused_err"] > CHECK_LIMIT for r in rows)
    if rows:
        print()
        headers = HEADERS + fused_headers(a) + (PEER_HEADERS if sonic_fn is not None else [])
        print(text_table(headers, [row_cells(r, sonic_fn is not None, a.fused, a.router == "gemmops", a.autotuned) for r in rows],
                         left=3))
        for line in (summary_lines(rows) + (fused_lines(rows) if a.fused else []) +
                     (peer_lines(rows) if sonic_fn is not None else [])):
            print(line)
    if failed:
        print(f"CHECK FAILED: a relative error above {CHECK_LIMIT:g} (see the rows)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
