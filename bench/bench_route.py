#!/usr/bin/env python3
# bench/bench_route.py: the MoE step's routing (the (token, choice) pairs sorted by expert) by
# gemmops.route's two sets of kernels (chunks of 4096 pairs, or wide: of a few hundred) and by torch's
# sort, in one process, CUDA-graph replays round-robin, L2 scrubbed; the three outputs compared bitwise
# SPDX-License-Identifier: Apache-2.0
"""Usage: python3 bench/bench_route.py [--configs qwen3-30b-a3b,mixtral-8x7b,...] [--reps 30]

Per bench_layer configuration (router routing: near-uniform loads), the routing moe_experts runs each
step: topk_ids (T, k) -> offsets, each sorted row's token, each pair's row, the sorted scores. Each
set of kernels is forced per call by GEMMOPS_ROUTE_KERNELS (set around that candidate's calls only);
route() by itself takes the wide ones up to 131072 pairs."""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import LAYER_CONFIGS, device_or_exit, select  # noqa: E402
from bench_grouped import Timer, with_env  # noqa: E402

NO_DEVICE = "bench_route.py needs a CUDA device; found none"


def candidates(cfg, device, seed=0):
    """{name: a call returning (offsets, rows, pair, sorted scores)} for cfg's routing."""
    from gemmops.torch import _routing
    g = torch.Generator(device="cpu").manual_seed(seed)
    logits = torch.randn(cfg.T, cfg.E, generator=g).to(device)
    scores, ids = torch.softmax(logits, -1).topk(cfg.topk, -1)
    ids = ids.to(torch.int32)

    route = lambda: _routing.route_pairs(ids, cfg.E, scores)  # noqa: E731
    return {"route chunked kernels": with_env(route, "GEMMOPS_ROUTE_KERNELS", "chunked"),
            "route wide kernels": with_env(route, "GEMMOPS_ROUTE_KERNELS", "wide"),
            "torch sort": with_env(route, "GEMMOPS_ROUTING", "torch")}


def agree(outs):
    """Whether every candidate's outputs equal the first's, bit for bit."""
    first = next(iter(outs.values()))
    return all(all(torch.equal(x, y) for x, y in zip(out, first)) for out in outs.values())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", default="qwen3-30b-a3b,mixtral-8x7b,deepseek-v3-ep8,qwen3-30b-a3b-32k",
                    help="comma-separated subset of: " + ", ".join(c.key for c in LAYER_CONFIGS))
    ap.add_argument("--reps", type=int, default=30)
    a = ap.parse_args(argv)
    device = device_or_exit("cuda", NO_DEVICE)
    if device is None:
        return 0
    timer = Timer(torch.cuda.get_device_properties(0).L2_cache_size)
    print(f"bench_route.py: {torch.cuda.get_device_name()}; torch {torch.__version__}", flush=True)
    for cfg in select(a.configs, LAYER_CONFIGS, "configuration"):
        fns = candidates(cfg, device)
        outs = {name: fn() for name, fn in fns.items()}
        same = agree(outs)
        t = timer.interleaved_medians_us(fns, a.reps)
        print(f"== {cfg.model}: T={cfg.T} k={cfg.topk} E={cfg.E} ({cfg.T * cfg.topk} pairs); outputs equal: {same}")
        for name, us in sorted(t.items(), key=lambda kv: kv[1]):
            print(f"  {us:8.1f} us  {name}")
    return 0


if __name__ == "__main__":
    main()
