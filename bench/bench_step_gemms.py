#!/usr/bin/env python3
# bench/bench_step_gemms.py: every candidate design on each of the MoE step's six grouped GEMMs, in the
# forms moe_experts runs them (gathered rows, gathered K, the epilogues' second operands)
# SPDX-License-Identifier: Apache-2.0
"""Every operator offered for each of the six grouped GEMMs of gemmops.torch.moe_experts' step, timed.

    python3 bench/bench_step_gemms.py [--configs qwen3-30b-a3b,mixtral-8x7b] [--reps 10] [--csv step.csv]

Per configuration (bench_layer.py's, router routing) the six products the step launches are built
from real tensors, as moe_experts builds them: up (x's rows gathered, SwiGLU, h kept), down, down
dgrad (dout's rows gathered, the activation's backward with its second operands), dW2 (K-grouped, dout
gathered along K), dW1 (K-grouped, x gathered along K) and up dgrad. Every operator get_operators()
offers for each is timed round-robin as CUDA-graph replays with L2 scrubbed (bench_grouped.py's
Timer). Printed per piece: the candidates fastest first with TFLOP/s and the ranking's place. Where
the first pick is not the fastest the ranking has something to learn for that form, and the sum of
the fastest per piece bounds what picks alone can give the step.
"""
import argparse
import csv
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import (LAYER_CONFIGS, SMOKE_CONFIGS, device_or_exit, select, variants_mismatched,  # noqa: E402
                          with_kernel_defines)

NO_DEVICE = "bench_step_gemms.py needs a CUDA device; found none"


def step_gemm_arguments(cfg, device, seed=0, twins=False, written=None):
    """{piece: (GroupedGemmArguments, FLOPs)} of one step of cfg's layer (SwiGLU, concatenated gate),
    with the tensors that keep them alive. The router routes as bench_layer.py's router rows do.
    twins: also "piece | variant" rows, the same product without the gather and/or the epilogue.
    written: a list that gets every tensor the products write (out and the epilogues' outputs)."""
    import gemmops as core
    from gemmops.torch import moe

    import bench_layer as bl

    router, w_gate_up, w_down, x, grad_out = bl.make_parameters(cfg, device, seed)
    with torch.no_grad():
        experts, scores = bl.route(x, router.weight, torch.zeros(cfg.T, cfg.E, device=device), cfg.topk)
    _, offsets, token = moe.route(experts, cfg.E)
    rows = token.to(torch.int32)
    S, H, I, E = cfg.T * cfg.topk, cfg.H, cfg.I, cfg.E
    g = torch.Generator(device="cpu").manual_seed(seed + 1)

    def randn(*shape, dtype=torch.bfloat16):
        return torch.randn(*shape, generator=g).to(device=device, dtype=dtype)

    def empty(*shape, dtype=torch.bfloat16):
        t = torch.empty(*shape, dtype=dtype, device=device)
        if written is not None:
            written.append(t)
        return t

    x, dout = x.detach(), grad_out
    wu = w_gate_up.detach().transpose(-2, -1)  # (E, H, 2I), K-major: as moe_experts is given it
    wd = w_down.detach().transpose(-2, -1)     # (E, I, H)
    h, act, dh, scaled = randn(S, 2 * I), randn(S, I), randn(S, 2 * I), randn(S, I)
    sorted_scores = torch.rand(S, generator=g).to(device)
    args = core.GroupedGemmArguments
    pieces = {
        "up": (args(x, wu, empty(S, I), "float32", offsets, True,
                    core.EpilogueOps("swiglu", pre_activation=empty(S, 2 * I)), a_row_index=rows), 2 * S * H * 2 * I),
        "down": (args(act, wd, empty(S, H), "float32", offsets, True), 2 * S * I * H),
        "down dgrad": (args(dout, wd.transpose(-2, -1), empty(S, 2 * I), "float32", offsets, True,
                            core.EpilogueOps("swiglu", row_scale=sorted_scores, grad_pre_activation=h,
                                             scaled_activation=empty(S, I),
                                             score_grad_partials=empty(S, core.score_grad_chunks(I), dtype=torch.float32)),
                            a_row_index=rows), 2 * S * H * I),
        # w_down is the transposed view of an (E, H, I) weight: dW2 is computed as (E, H, I) (moe.py).
        "dW2": (args(dout.t(), scaled, empty(E, H, I), "float32", offsets, a_k_index=rows), 2 * S * I * H),
        # w_gate_up likewise: dW1 in the weight's (E, 2I, H) layout from x^T dh with x gathered as A,
        # each group's tile stored transposed (M-major), as moe.py takes it first.
        "dW1": (args(x.t(), dh, empty(E, 2 * I, H).transpose(-2, -1), "float32", offsets, a_k_index=rows),
                2 * S * H * 2 * I),
        "up dgrad": (args(dh, wu.transpose(-2, -1), empty(S, H), "float32", offsets, True), 2 * S * 2 * I * H),
    }
    if twins:
        # The same products without the gather and without the epilogue's work, each step of the
        # difference its own row: what the gathered producer and the fused epilogue cost per piece.
        x_rows, dout_rows = randn(S, H), randn(S, H)
        pieces.update({
            "up | dense A + SwiGLU": (args(x_rows, wu, empty(S, I), "float32", offsets, True,
                                          core.EpilogueOps("swiglu", pre_activation=empty(S, 2 * I))), 2 * S * H * 2 * I),
            "up | gathered A plain": (args(x, wu, empty(S, 2 * I), "float32", offsets, True, a_row_index=rows),
                                       2 * S * H * 2 * I),
            "up | dense A plain": (args(x_rows, wu, empty(S, 2 * I), "float32", offsets, True), 2 * S * H * 2 * I),
            "down dgrad | dense A + dSwiGLU": (args(dout_rows, wd.transpose(-2, -1), empty(S, 2 * I), "float32", offsets,
                                                    True, core.EpilogueOps("swiglu", row_scale=sorted_scores,
                                                                           grad_pre_activation=h,
                                                                           scaled_activation=empty(S, I),
                                                                           score_grad_partials=empty(
                                                                               S, core.score_grad_chunks(I),
                                                                               dtype=torch.float32))),
                                               2 * S * H * I),
            "down dgrad | gathered A plain": (args(dout, wd.transpose(-2, -1), empty(S, I), "float32", offsets, True,
                                                   a_row_index=rows), 2 * S * H * I),
            "down dgrad | dense A plain": (args(dout_rows, wd.transpose(-2, -1), empty(S, I), "float32", offsets, True),
                                            2 * S * H * I),
            "dW2 | dense": (args(dout_rows.t(), scaled, empty(E, H, I), "float32", offsets), 2 * S * I * H),
            "dW2 | I x H by b_k_index": (args(scaled.t(), dout, empty(E, I, H), "float32", offsets, b_k_index=rows),
                                           2 * S * I * H),
            "dW1 | H x 2I by a_k_index": (args(x.t(), dh, empty(E, H, 2 * I), "float32", offsets, a_k_index=rows),
                                           2 * S * H * 2 * I),
            "dW1 | dense": (args(dh.t(), x_rows, empty(E, 2 * I, H), "float32", offsets), 2 * S * H * 2 * I),
            # The weight's layout the other way: dh^T x with x gathered as B (no cluster).
            "dW1 | 2I x H by b_k_index": (args(dh.t(), x, empty(E, 2 * I, H), "float32", offsets, b_k_index=rows),
                                           2 * S * H * 2 * I),
        })
    return pieces


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", default="qwen3-30b-a3b", help="comma-separated subset of: " +
                    ", ".join(c.key for c in LAYER_CONFIGS if not c.forward_only))
    ap.add_argument("--reps", type=int, default=10, help="replays per candidate (the median is reported)")
    ap.add_argument("--csv", help="every candidate's time: config, piece, operator, rank, us, TFLOP/s")
    ap.add_argument("--twins", action="store_true",
                    help="also time each piece's pick without the gather and without the epilogue (the same design "
                         "where it serves them): what the gather and the fused epilogue cost")
    ap.add_argument("--pieces", default="", help="piece names to run, separated by ';' (default: all)")
    ap.add_argument("--once", action="store_true",
                    help="run each piece's first pick (a twin: the piece's own where it serves the twin) twice (compile, "
                         "then once more) and time nothing: a run for a profiler to wrap (e.g. ncu)")
    ap.add_argument("--design", default="", help="only the candidates whose name contains this (e.g. 128x128x64_c1x1_s6_pingpong)")
    ap.add_argument("--top", type=int, default=0,
                    help="time only each piece's first N candidates and its trial designs (default: all)")
    ap.add_argument("--ab-defines", default="",
                    help="kernel A/B in one process: time each piece's pick compiled as it is and compiled with these "
                         "GEMMOPS_KERNEL_DEFINES (a kernel change behind a define), round-robin, instead of every candidate; "
                         "several variants separated by '|' (each its own column, the first the ratio's base)")
    a = ap.parse_args(argv)
    device = device_or_exit("cuda", NO_DEVICE)
    if device is None:
        return 0
    import gemmops as core
    from bench_grouped import Timer

    timer = Timer(torch.cuda.get_device_properties(device).L2_cache_size)
    print(f"bench_step_gemms.py: {torch.cuda.get_device_name(device)}; {a.reps} replays a candidate", flush=True)
    table = []
    for cfg in select(a.configs, LAYER_CONFIGS + SMOKE_CONFIGS, "configuration"):
        print(f"== {cfg.model}: T={cfg.T} E={cfg.E} H={cfg.H} I={cfg.I} top-{cfg.topk}", flush=True)
        best_sum = pick_sum = 0.0
        picks = {}
        written = []
        for piece, (args, flops) in step_gemm_arguments(cfg, device, twins=a.twins, written=written).items():
            if a.pieces and piece not in a.pieces.split(";"):
                continue
            candidates = core.get_operators(args)
            if a.design:
                candidates = [o for o in candidates if a.design in o.name]
            if a.top > 0:  # the first N, and every trial design (ranked last until a sweep fits them)
                candidates = candidates[:a.top] + [o for o in candidates[a.top:] if o.metadata["trial"]]
            if " | " in piece:  # a twin: the real piece's pick only, where it serves the twin
                real = picks.get(piece.split(" | ")[0])
                same = [o for o in candidates if o.name == real]
                candidates = same or candidates[:3]  # another form: its first three
            else:
                picks[piece] = candidates[0].name if candidates else None
            if a.once:
                if not candidates:
                    print(f"  {piece}: no candidate", flush=True)
                    continue
                art = candidates[0].compile(args)
                for _ in range(2):
                    candidates[0].run(args, compiled_artifact=art)
                torch.cuda.synchronize()
                print(f"  {piece}: ran {candidates[0].name} twice", flush=True)
                continue
            if a.ab_defines and candidates:
                o = candidates[0]
                variants = {}
                variant_defines = [v.strip() for v in a.ab_defines.split("|") if v.strip()]
                for label, defines in [("as built", None)] + [("with " + v, v) for v in variant_defines]:
                    art = with_kernel_defines(defines, lambda o=o, args=args: o.compile(args))
                    variants[label] = lambda o=o, art=art, args=args: o.run(args, compiled_artifact=art)
                mismatched = variants_mismatched(variants, written)
                us = timer.interleaved_medians_us(variants, reps=a.reps)
                ratios = ", ".join(f"as built / with {v}: {us['as built'] / us['with ' + v]:.3f}" for v in variant_defines)
                print(f"  {piece}: {o.name}: " + ", ".join(f"{k} {v:.1f} us" for k, v in us.items()) + "; " + ratios
                      + "; outputs " + ("MISMATCH " + ", ".join(mismatched) if mismatched else "bitwise equal"),
                      flush=True)
                for k, v in us.items():
                    table.append((cfg.key, piece, f"{o.name} ({k})", 0, round(v, 2), round(flops / v / 1e6, 1)))
                continue
            runs = {}
            for o in candidates:
                art = o.compile(args)
                runs[o.name] = lambda o=o, art=art, args=args: o.run(args, compiled_artifact=art)
            us = timer.interleaved_medians_us(runs, reps=a.reps) if runs else {}
            rank = {o.name: i for i, o in enumerate(candidates)}
            ordered = sorted(us.items(), key=lambda kv: kv[1])
            if ordered and " | " not in piece:
                best_sum += ordered[0][1]
                pick_sum += us[candidates[0].name]
            print(f"  {piece}: {len(candidates)} candidates; pick {us.get(candidates[0].name, float('nan')):.1f} us, "
                  f"fastest {ordered[0][1] if ordered else float('nan'):.1f} us", flush=True)
            for name, t in ordered:
                print(f"    {t:9.1f} us {flops / t / 1e6:7.0f} TFLOP/s  rank {rank[name]:2d}  {name}", flush=True)
                table.append((cfg.key, piece, name, rank[name], round(t, 2), round(flops / t / 1e6, 1)))
        if pick_sum:  # (an A/B or --once run times no set of candidates)
            print(f"  six GEMMs: the picks {pick_sum / 1e3:.3f} ms, the fastest per piece {best_sum / 1e3:.3f} ms",
                  flush=True)
        if a.csv:  # after every config: a cut-short run still leaves its numbers
            with open(a.csv, "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(["config", "piece", "operator", "rank", "us", "tflops"])
                w.writerows(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
