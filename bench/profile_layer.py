#!/usr/bin/env python3
# bench/profile_layer.py: where the MoE experts layer's device time goes, per kernel, with torch's
# grouped mm and with gemmops' (the layer of bench_layer.py, eager forward + backward)
# SPDX-License-Identifier: Apache-2.0
"""Kernel time breakdown of one eager forward+backward of bench_layer.py's layer.

    python3 bench/profile_layer.py [--configs qwen3-30b-a3b,gpt-oss-20b] [--iters 5] [--top 12]

Prints, per configuration and implementation, the device time of one step and its most expensive
kernels (torch.profiler, CUDA activity): the share of the grouped GEMMs against the rest of the layer
bounds what a faster grouped mm can give the whole layer.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_layer as bl  # noqa: E402
from bench_common import LAYER_CONFIGS, device_or_exit, select  # noqa: E402


def kernel_times(layer, x, bias, grad_out, leaves, iters):
    """{kernel name: device microseconds per step}."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):  # compiles and plans outside the profile
        bl.step(layer, x, bias, grad_out, leaves, True)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            bl.step(layer, x, bias, grad_out, leaves, True)
        torch.cuda.synchronize()
    return {e.key: e.device_time_total / iters for e in prof.key_averages() if e.device_time_total > 0}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", default="qwen3-30b-a3b", help="comma-separated subset of: " +
                    ", ".join(c.key for c in LAYER_CONFIGS if not c.forward_only))
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--top", type=int, default=12)
    a = ap.parse_args(argv)
    device = device_or_exit("cuda", "profile_layer.py needs a CUDA device; found none")
    if device is None:
        return 0
    import gemmops.torch

    for cfg in select(a.configs, LAYER_CONFIGS, "configuration"):
        router, w_gate_up, w_down, x, grad_out = bl.make_parameters(cfg, device, 0)
        bias = torch.zeros(cfg.T, cfg.E, device=device)
        leaves = [x, router.weight, w_gate_up, w_down]
        for name, mm in (("torch", torch._grouped_mm), ("gemmops", gemmops.torch.grouped_mm)):
            layer = bl.MoEExperts(router, w_gate_up, w_down, cfg.topk, mm)
            times = kernel_times(layer, x, bias, grad_out, leaves, a.iters)
            total = sum(times.values())
            gemm = sum(t for k, t in times.items() if "gemm" in k.lower() or "cutlass" in k.lower())
            print(f"== {cfg.name} {name}: {total / 1000:.3f} ms of device time a forward+backward; grouped GEMMs "
                  f"{gemm / 1000:.3f} ms ({100 * gemm / total:.0f}%)")
            for k, t in sorted(times.items(), key=lambda kv: -kv[1])[:a.top]:
                print(f"  {t / 1000:8.3f} ms  {k[:110]}")


if __name__ == "__main__":
    main()
