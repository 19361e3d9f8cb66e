#!/usr/bin/env python3
# bench/bench_host.py: what a grouped GEMM costs the host per call (operator choice, launch, the torch
# op) against the targets, and gemmops.torch.grouped_mm against torch._grouped_mm back to back.
# SPDX-License-Identifier: Apache-2.0
"""Host cost per call of gemmops, against the issue's targets.

    python3 bench/bench_host.py [--problems seed,decode] [--calls 200] [--repeats 7] [--markdown host.md]
    python3 bench/bench_host.py --device cpu --smoke     # the code paths at tiny sizes, no GPU

Per problem (M-grouped, bf16, B K-major, even group sizes):
  GroupedGemmArguments(...)   building the arguments from tensors (no target; gemmops.torch does it per call)
  get_operators(args)         choosing the operators, prebuilt args: target <= 20 us
  op.run(args, artifact)      launching, prebuilt args and artifact, perf_counter around --calls calls
                              with no sync inside (one after): target <= 15 us
  grouped_mm, host            gemmops.torch.grouped_mm and torch._grouped_mm back to back, perf_counter
                              around each call, no sync until the end: target gemmops <= torch
  grouped_mm, wall            the same calls, CUDA events around --calls of them (what the GPU sees,
                              host overhead included): target gemmops <= torch
Each figure is the median over --repeats; the two implementations are timed in turn.
"""
import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import (HOST_PROBLEMS, HOST_TARGETS_US, SMOKE_HOST_PROBLEMS, build_description, device_or_exit,  # noqa: E402
                          even_sizes, first_line, fmt, markdown_table, meets, median_per_call, padded, select,
                          text_table)

NO_DEVICE = "bench_host.py needs a CUDA device; found none (--device cpu --smoke runs its code paths on the CPU)"


def make_problem(p, device, seed=0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    A = torch.randn(p.TotalM, p.K, generator=g).to(device=device, dtype=torch.bfloat16)
    B = torch.randn(p.G, p.N, p.K, generator=g).to(device=device, dtype=torch.bfloat16).transpose(-2, -1)  # K-major
    sizes = even_sizes(p.TotalM, p.G)
    offsets = torch.tensor(sizes, dtype=torch.int64).cumsum(0).to(device=device, dtype=torch.int32)
    out = torch.empty(p.TotalM, p.N, device=device, dtype=torch.bfloat16)
    return A, B, offsets, out


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def host_per_call(fn, calls, repeats, device):
    """Median over repeats of perf_counter around `calls` calls (no sync inside) / calls, in us."""
    samples = []
    for _ in range(repeats):
        sync(device)
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append(time.perf_counter() - t0)
        sync(device)
    return median_per_call(samples, calls) * 1e6


def interleaved_host_and_wall(fns, calls, repeats, device):
    """Per function, in us: the median host time of one call (perf_counter around each, no sync
    until the end of a repeat) and the median wall time per call of a repeat (CUDA events around
    the calls; on the CPU, perf_counter). The functions take turns within each repeat."""
    host = {name: [] for name in fns}
    wall = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            sync(device)
            if device.type == "cuda":
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
            t_start = time.perf_counter()
            for _ in range(calls):
                t0 = time.perf_counter()
                fn()
                host[name].append(time.perf_counter() - t0)
            if device.type == "cuda":
                end.record()
                end.synchronize()
                wall[name].append(start.elapsed_time(end) / 1e3)
            else:
                wall[name].append(time.perf_counter() - t_start)
    return ({name: statistics.median(t) * 1e6 for name, t in host.items()},
            {name: median_per_call(t, calls) * 1e6 for name, t in wall.items()})


def bench_problem(p, a, device):
    import gemmops as ops
    import gemmops.torch
    A, B, offsets, out = make_problem(p, device)
    build = lambda: ops.GroupedGemmArguments(A, B, out, accumulator_type=torch.float32, offsets=offsets)
    args = build()
    candidates = ops.get_operators(args)
    if not candidates:
        raise RuntimeError(f"no operator serves {args!r}")
    op = candidates[0]
    artifact = op.compile(args)
    op.run(args, compiled_artifact=artifact)  # warm: first-launch setup outside the timing
    sync(device)
    t_args = host_per_call(build, a.calls, a.repeats, device)
    t_choose = host_per_call(lambda: ops.get_operators(args), a.calls, a.repeats, device)
    t_run = host_per_call(lambda: op.run(args, compiled_artifact=artifact), a.calls, a.repeats, device)

    fns = {"gemmops": lambda: gemmops.torch.grouped_mm(A, B, offsets),
           "torch": lambda: torch._grouped_mm(A, B, offsets)}
    for fn in fns.values():  # the first gemmops call compiles its artifact
        for _ in range(3):
            fn()
    sync(device)
    host, wall = interleaved_host_and_wall(fns, a.calls, a.repeats, device)
    shape = f"G={p.G} TotalM={p.TotalM} K={p.K} N={p.N}"
    return [
        {"problem": p.key, "shape": shape, "measure": "GroupedGemmArguments(...)", "gemmops_us": t_args,
         "torch_us": float("nan"), "target": "", "meets": ""},
        {"problem": p.key, "shape": shape, "measure": "get_operators(args)", "gemmops_us": t_choose,
         "torch_us": float("nan"), "target": f"<= {HOST_TARGETS_US['get_operators']:g} us",
         "meets": meets(t_choose, HOST_TARGETS_US["get_operators"])},
        {"problem": p.key, "shape": shape, "measure": "op.run(args, artifact), host", "gemmops_us": t_run,
         "torch_us": float("nan"), "target": f"<= {HOST_TARGETS_US['run']:g} us",
         "meets": meets(t_run, HOST_TARGETS_US["run"])},
        {"problem": p.key, "shape": shape, "measure": "grouped_mm, host", "gemmops_us": host["gemmops"],
         "torch_us": host["torch"], "target": "<= torch", "meets": meets(host["gemmops"], host["torch"])},
        {"problem": p.key, "shape": shape, "measure": "grouped_mm, wall", "gemmops_us": wall["gemmops"],
         "torch_us": wall["torch"], "target": "<= torch", "meets": meets(wall["gemmops"], wall["torch"])},
    ], op.name


HEADERS = ["problem", "shape", "measure", "gemmops us", "torch us", "target", "meets"]


def row_cells(r):
    return [r["problem"], r["shape"], r["measure"], fmt(r["gemmops_us"], ".1f"), fmt(r["torch_us"], ".1f"),
            r["target"], r["meets"]]


def markdown_section(rows, operators, a, device_name):
    missed = [r for r in rows if r["meets"] == "no"]
    text = ("## Host cost per call (bench/bench_host.py)\n\n"
            f"M-grouped bf16, B K-major, even group sizes; {device_name}; torch {torch.__version__}; "
            f"{build_description()}. Medians over {a.repeats} repeats of {a.calls} back-to-back calls. "
            "*get_operators* and *op.run* use prebuilt arguments (and artifact); op.run's time is perf_counter "
            "around the calls with no sync inside. *grouped_mm, host* is perf_counter around each call of "
            "gemmops.torch.grouped_mm and torch._grouped_mm (no sync until the end); *grouped_mm, wall* CUDA events "
            "around the calls, host overhead included; the two implementations timed in turn. "
            "Operators: " + "; ".join(f"{k}: `{v}`" for k, v in operators.items()) + ". "
            "Generated by bench/bench_host.py.\n\n")
    text += (f"Targets missed: {len(missed)} of {sum(1 for r in rows if r['meets'])}"
             + (" (" + "; ".join(f"{r['problem']} {r['measure']}" for r in missed) + ")" if missed else "") + ".\n\n")
    return text + markdown_table(HEADERS, [row_cells(r) for r in rows], left=3)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problems", default="", help="comma-separated subset of: " +
                    ", ".join(p.key for p in HOST_PROBLEMS) + " (default: all)")
    ap.add_argument("--calls", type=int, default=200, help="back-to-back calls inside one timing")
    ap.add_argument("--repeats", type=int, default=7, help="timings per measure (the median is reported)")
    ap.add_argument("--markdown", help="write the BENCHMARKS.md section to this file")
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu (with --smoke: the code paths, tiny sizes)")
    ap.add_argument("--smoke", action="store_true", help="tiny problems and few calls (a quick run of every path)")
    a = ap.parse_args(argv)
    problems = SMOKE_HOST_PROBLEMS if a.smoke else HOST_PROBLEMS
    a.problems = select(a.problems, problems, "problem") if a.problems else list(problems)
    if a.smoke:
        a.calls, a.repeats = min(a.calls, 5), min(a.repeats, 2)
    return a


def main(argv=None):
    a = parse_args(argv)
    device = device_or_exit(a.device, NO_DEVICE)
    if device is None:
        return 0
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    rows, operators = [], {}
    for p in a.problems:
        try:
            got, operators[p.key] = bench_problem(p, a, device)
        except Exception as e:  # a problem that fails is reported, the rest still run
            print(f"{p.key} FAILED: {first_line(e)}", flush=True)
            continue
        rows += got
        for r in got:
            print(padded(row_cells(r), [12, 30, 30, 10, 10, 9, 5], left=3), flush=True)
        if a.markdown:
            with open(a.markdown, "w") as f:
                f.write(markdown_section(rows, operators, a, device_name))
    if rows:
        print()
        print(text_table(HEADERS, [row_cells(r) for r in rows], left=3))
        judged = [r for r in rows if r["meets"]]
        missed = [r for r in judged if r["meets"] == "no"]
        print(f"targets met: {len(judged) - len(missed)} of {len(judged)}"
              + ("" if not missed else "; missed: " + "; ".join(f"{r['problem']} {r['measure']}" for r in missed)))
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
