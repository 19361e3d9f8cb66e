#!/usr/bin/env python3
# bench/profile_layer.py: where the MoE experts layer's device time goes, per kernel, with torch's
# grouped mm, with gemmops', with the fused step (moe_experts) and with SonicMoE's (eager forward + backward)
# SPDX-License-Identifier: Apache-2.0
"""Kernel time breakdown of one eager forward+backward of bench_layer.py's layer.

    python3 bench/profile_layer.py [--configs qwen3-30b-a3b,gpt-oss-20b] [--iters 5] [--top 12] [--peers]

Prints, per configuration and implementation, the device time of one step and its most expensive
kernels (torch.profiler, CUDA activity): the share of the grouped GEMMs against the rest of the layer
bounds what a faster grouped mm can give the whole layer, and the fused step's kernels beside
SonicMoE's (--peers) say which of its parts costs more than the peer's.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_layer as bl  # noqa: E402
from bench_common import LAYER_CONFIGS, device_or_exit, select  # noqa: E402


def short_name(kernel):
    """A kernel's name without the namespaces that make every gemmops and CUTLASS name alike."""
    for prefix in ("gemmops::kernels::sm90::", "gemmops::kernels::", "at::native::", "cutlass::"):
        kernel = kernel.replace(prefix, "")
    return kernel


def step_in_order(prof, iters):
    """[(kernel, start us, end us)] of the last step, in launch order: which GEMM of the step each
    kernel is (the aggregate by name merges kernels that share one) and where the device idles."""
    from torch.autograd import DeviceType

    kernels = sorted((e for e in prof.events() if e.device_type == DeviceType.CUDA), key=lambda e: e.time_range.start)
    return [(e.name, e.time_range.start, e.time_range.end) for e in kernels[-(len(kernels) // iters):]]


def idle_gaps(in_order):
    """(device activities a step, microseconds the device idles between them, [(gap us, before, after)]
    largest first): what launches and host time cost beyond the kernels' own time (the profiler's
    tracing adds a little to each gap)."""
    gaps, busy_until, last = [], None, None
    for name, start, end in in_order:  # (by start; an activity that outlasts the next covers it)
        if busy_until is not None and start > busy_until:
            gaps.append((start - busy_until, last, name))
        if busy_until is None or end > busy_until:
            busy_until, last = end, name
    return len(in_order), sum(g for g, _, _ in gaps), sorted(gaps, reverse=True)


def kernel_times(one_step, iters):
    """({kernel name: device microseconds per step}, the last step's kernels in order) of one_step(),
    a forward and backward."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):  # compiles and plans outside the profile
        one_step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            one_step()
        torch.cuda.synchronize()
    totals = {e.key: e.device_time_total / iters for e in prof.key_averages() if e.device_time_total > 0}
    return totals, step_in_order(prof, iters)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", default="qwen3-30b-a3b", help="comma-separated subset of: " +
                    ", ".join(c.key for c in LAYER_CONFIGS if not c.forward_only))
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--peers", action="store_true", help="also SonicMoE's step, when importable")
    ap.add_argument("--order", type=float, default=0, metavar="US",
                    help="also list one step's kernels of at least US microseconds in launch order")
    ap.add_argument("--gaps", type=int, default=6, help="the largest idle gaps between a step's kernels to list")
    ap.add_argument("--width", type=int, default=110, help="characters of each kernel name")
    ap.add_argument("--router", choices=("torch", "gemmops"), default="torch",
                    help="gemmops: also the fused layer routed by gemmops.torch.router_topk (block \"fused+router\")")
    a = ap.parse_args(argv)
    device = device_or_exit("cuda", "profile_layer.py needs a CUDA device; found none")
    if device is None:
        return 0
    import gemmops.torch

    sonic_fn = bl.sonic_layer_function() if a.peers else None
    for cfg in select(a.configs, LAYER_CONFIGS, "configuration"):
        router, w_gate_up, w_down, x, grad_out = bl.make_parameters(cfg, device, 0)
        bias = torch.zeros(cfg.T, cfg.E, device=device)
        leaves = [x, router.weight, w_gate_up, w_down]
        layers = {name: bl.MoEExperts(router, w_gate_up, w_down, cfg.topk, mm)
                  for name, mm in (("torch", torch._grouped_mm), ("gemmops", gemmops.torch.grouped_mm))}
        layers["fused"] = bl.FusedMoEExperts(router, w_gate_up, w_down, cfg.topk)
        if a.router == "gemmops":
            layers["fused+router"] = bl.FusedMoEExperts(router, w_gate_up, w_down, cfg.topk, router_kind="gemmops")
        steps = {name: (lambda l=l: bl.step(l, x, bias, grad_out, leaves, True)) for name, l in layers.items()}
        if sonic_fn is not None:
            sonic = bl.SonicLayer(sonic_fn, router, w_gate_up, w_down, cfg.topk)
            steps["sonic"] = lambda: sonic.step(x, grad_out, True)
        for name, one_step in steps.items():
            try:
                times, in_order = kernel_times(one_step, a.iters)
            except Exception as e:  # a peer that refuses the config loses its block, nothing else
                print(f"== {cfg.model} {name}: failed: {bl.first_line(e)}")
                continue
            total = sum(times.values())
            gemm = sum(t for k, t in times.items() if "gemm" in k.lower() or "cutlass" in k.lower())
            print(f"== {cfg.model} {name}: {total / 1000:.3f} ms of device time a forward+backward; grouped GEMMs "
                  f"{gemm / 1000:.3f} ms ({100 * gemm / total:.0f}%)")
            for k, t in sorted(times.items(), key=lambda kv: -kv[1])[:a.top]:
                print(f"  {t / 1000:8.3f} ms  {short_name(k)[:a.width]}")
            count, idle, gaps = idle_gaps(in_order)
            print(f"  -- {count} device activities a step, the device idle {idle / 1000:.3f} ms between them; "
                  f"the largest gaps:")
            for gap, before, after in gaps[:a.gaps]:
                print(f"  {gap:8.1f} us  after {short_name(before)[:50]}  before {short_name(after)[:50]}")
            if a.order:
                print(f"  -- one step's kernels of at least {a.order} us, in launch order:")
                for k, start, end in in_order:
                    if end - start >= a.order:
                        print(f"  {(end - start) / 1000:8.3f} ms  {short_name(k)[:a.width]}")


if __name__ == "__main__":
    main()
