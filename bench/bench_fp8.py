#!/usr/bin/env python3
# bench/bench_fp8.py: the fp8 block-scaled M-grouped GEMM (e4m3, 1x128 A scales, 128x128 B scales,
# bf16 out) against gemmops bf16, torch's bf16 and row-wise fp8 grouped mm (and gemmops' row-wise on
# the same operands), and DeepGEMM where it is importable (its aligned rows only), in one process,
# CUDA-graph replays round-robin, L2 scrubbed.
# SPDX-License-Identifier: Apache-2.0
"""Usage: GEMMOPS_TRIAL_DESIGNS=1 python3 bench/bench_fp8.py [--rows deepgemm,uniform,zipf,masked] [--reps 20]

Rows: DeepGEMM's published shapes (4 groups x 8192 rows; N=4096 K=7168 and N=7168 K=2048) with
aligned groups, then the same totals split into uniform-but-unaligned and Zipf group sizes, which
DeepGEMM cannot take unpadded, and DeepGEMM's masked rows (4 groups of 256 rows, full) against
gemmops bf16 on the same layout. The run opts in to trial designs (GEMMOPS_TRIAL_DESIGNS=1, set here
when unset), so every fp8 design gets a column: the first (the ranking's pick) as "gemmops fp8", any
other GPU fp8 operator (a trial such as the 2-CTA cluster) as "gemmops fp8 <its design>"."""

import argparse
import os
import sys

os.environ.setdefault("GEMMOPS_TRIAL_DESIGNS", "1")

import torch  # noqa: E402

import gemmops as ops  # noqa: E402
import gemmops.torch as gt  # noqa: E402
from bench_common import (even_sizes, first_line, markdown_table, text_table, variants_mismatched,  # noqa: E402
                          with_kernel_defines, zipf_loads)
from bench_grouped import Timer  # noqa: E402

SHAPES = [(4, 8192, 4096, 7168), (4, 8192, 7168, 2048)]  # (groups, rows per group, N, K): DeepGEMM's


def group_sizes(kind, G, rows):
    total = G * rows
    if kind == "deepgemm":
        return [rows] * G
    if kind == "uniform":  # same total, sizes off the 128-row grid
        sizes = even_sizes(total, G)
        sizes[0] -= 37
        sizes[-1] += 37
        return sizes
    loads = zipf_loads(G, total, total, seed=7)
    return [int(x) for x in loads]


def dequantized(q, scales, block_rows):
    """q (R, C) e4m3 with (R/block_rows, C/128)-blocked scales, in float32."""
    s = scales.repeat_interleave(block_rows, 0)[: q.shape[0]].repeat_interleave(128, 1)[:, : q.shape[1]]
    return q.float() * s


def first_gpu_operator(args):
    """(name, a call running it) of the first GPU operator get_operators offers for args, compiled once."""
    found = [op for op in ops.get_operators(args) if op.metadata["provider"] != "cpu"]
    if not found:
        raise RuntimeError("no GPU operator serves these arguments")
    art = found[0].compile(args)
    return found[0].name, (lambda: found[0].run(args, compiled_artifact=art))


def other_gpu_operators(args):
    """{"gemmops fp8 <design>": a call running it} of every GPU operator after the first for args."""
    found = [op for op in ops.get_operators(args) if op.metadata["provider"] != "cpu"][1:]
    calls = {}
    for op in found:
        art = op.compile(args)
        calls[f"gemmops fp8 {op.name.split('f32acc_')[-1]}"] = lambda op=op, art=art: op.run(args, compiled_artifact=art)
    return calls


def fp8_candidate(A, W, offsets, out):
    """gemmops' fp8 operator on the quantised operands: (name, fn, the quantised operands, the other designs' calls)."""
    qa, sa = ops.fp8.quantize(A, "block_1x128")
    qw, sw = ops.fp8.quantize(W, "block_128x128")  # W (G, N, K): B = W^T per group, K-major
    args = ops.GroupedGemmArguments(qa, qw.permute(0, 2, 1), out, accumulator_type="float32", offsets=offsets,
                                    a_scales=sa, b_scales=sw)
    name, fn = first_gpu_operator(args)
    return name, fn, (qa, sa.scales, qw, sw.scales), other_gpu_operators(args)


def quantised_reference(qa, sa, qw, sw, ends):
    ref, start = [], 0
    for g, end in enumerate(ends):
        a = dequantized(qa[start:end], sa[start:end], 1)
        w = dequantized(qw[g], sw[g], 128)
        ref.append(a @ w.T)
        start = end
    return torch.cat(ref)


def rowwise_operands(A, W):
    """A and W quantised with a scale per row of A and per row of W (a column of B): torch's row-wise."""
    fmax = torch.finfo(torch.float8_e4m3fn).max
    sa = A.abs().amax(1).float().clamp(min=1e-12) / fmax
    qa = (A.float() / sa[:, None]).to(torch.float8_e4m3fn)
    sw = W.abs().amax(2).float().clamp(min=1e-12) / fmax  # (G, N)
    qw = (W.float() / sw[:, :, None]).to(torch.float8_e4m3fn)  # (G, N, K)
    return qa, sa, qw, sw


def gemmops_rowwise(operands, offsets, out):
    """gemmops' fp8 operator on torch's row-wise operands (the same bytes torch's op reads): fn or why not."""
    qa, sa, qw, sw = operands
    try:
        _, fn = first_gpu_operator(ops.GroupedGemmArguments(
            qa, qw.transpose(1, 2), out, accumulator_type="float32", offsets=offsets,
            a_scales=ops.OperandScales(sa, "row"), b_scales=ops.OperandScales(sw, "row")))
    except Exception as e:  # noqa: BLE001 - report why it cannot run
        return None, first_line(str(e))
    return fn, ""


def peer_call(fn):
    """(fn, "") when a peer's call runs here, else (None, why not): it is run once and waited for."""
    try:
        fn()
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - report why the peer cannot run
        return None, first_line(str(e))
    return fn, ""


def torch_rowwise(operands, offsets):
    """torch._scaled_grouped_mm with row-wise scales (what torch serves): fn or the reason not."""
    if not hasattr(torch, "_scaled_grouped_mm"):
        return None, "torch has no _scaled_grouped_mm"
    qa, sa, qw, sw = operands
    return peer_call(lambda: torch._scaled_grouped_mm(qa, qw.transpose(1, 2), sa, sw, offs=offsets,
                                                      out_dtype=torch.bfloat16))


def deepgemm_module():
    """(deep_gemm, its per-token and per-block casts) or None where it is not importable."""
    try:
        import deep_gemm
        from deep_gemm.utils import per_block_cast_to_fp8, per_token_cast_to_fp8
    except ImportError:
        return None
    return deep_gemm, per_token_cast_to_fp8, per_block_cast_to_fp8


def stacked_casts(cast, x):
    """DeepGEMM's (codes, scales) of each x[g] by `cast`, stacked over g."""
    parts = [cast(x[g], use_ue8m0=False) for g in range(x.shape[0])]
    return torch.stack([q for q, _ in parts]), torch.stack([s for _, s in parts])


def deepgemm(A, W, sizes):
    """DeepGEMM's contiguous m-grouped fp8 GEMM where importable and the groups are 128-aligned."""
    dg = deepgemm_module()
    if dg is None:
        return None, "deep_gemm not importable"
    if any(s % 128 for s in sizes):
        return None, "groups not on 128-row boundaries"
    deep_gemm, per_token, per_block = dg
    qa, qw = per_token(A, use_ue8m0=False), stacked_casts(per_block, W)
    layout = torch.cat([torch.full((s,), g, dtype=torch.int32, device="cuda") for g, s in enumerate(sizes)])
    out = torch.empty(A.shape[0], W.shape[1], dtype=torch.bfloat16, device="cuda")
    return peer_call(lambda: deep_gemm.m_grouped_fp8_gemm_nt_contiguous(qa, qw, out, layout))


def deepgemm_masked(A, W, counts, expected_m):
    """DeepGEMM's masked fp8 GEMM (A (G, MaxM, K), counts (G,) valid rows) where importable."""
    dg = deepgemm_module()
    if dg is None:
        return None, "deep_gemm not importable"
    deep_gemm, per_token, per_block = dg
    qa, qw = stacked_casts(per_token, A), stacked_casts(per_block, W)
    out = torch.empty(A.shape[0], A.shape[1], W.shape[1], dtype=torch.bfloat16, device="cuda")
    return peer_call(lambda: deep_gemm.m_grouped_fp8_gemm_nt_masked(qa, qw, out, counts, expected_m))


AB_DEFINES = ""  # --ab-defines: gemmops' fp8 operators also compiled with these, in the same round-robin


def bench_row(timer, kind, G, rows, N, K, reps):
    sizes = group_sizes(kind, G, rows)
    total = sum(sizes)
    A = torch.randn(total, K, device="cuda", dtype=torch.bfloat16)
    W = torch.randn(G, N, K, device="cuda", dtype=torch.bfloat16) * 0.05
    ends = torch.tensor(sizes, dtype=torch.int64).cumsum(0)
    offsets = ends.to(torch.int32).cuda()
    out = torch.empty(total, N, device="cuda", dtype=torch.bfloat16)
    name, fp8_fn, quantised, others = fp8_candidate(A, W, offsets, out)
    fns = {"gemmops fp8": fp8_fn, "gemmops bf16": lambda: gt.grouped_mm(A, W.transpose(1, 2), offs=offsets),
           "torch bf16": lambda: torch._grouped_mm(A, W.transpose(1, 2), offs=offsets, out_dtype=torch.bfloat16),
           **others}
    notes = []
    rowwise = rowwise_operands(A, W)
    out_rowwise = torch.empty_like(out)
    for label, (fn, why) in (("gemmops fp8 row-wise", gemmops_rowwise(rowwise, offsets, out_rowwise)),
                             ("torch fp8 row-wise", torch_rowwise(rowwise, offsets)), ("DeepGEMM", deepgemm(A, W, sizes))):
        if fn is None:
            notes.append(f"{label}: {why}")
        else:
            fns[label] = fn
    if AB_DEFINES:
        # Every fp8 design compiled with the defines too (the first and, trials in, the others), each
        # checked bit for bit against its build before the round-robin.
        _, ab_fn, _, ab_others = with_kernel_defines(AB_DEFINES, lambda: fp8_candidate(A, W, offsets, out))
        pairs = {"gemmops fp8": ab_fn, **ab_others}
        fn, _ = with_kernel_defines(AB_DEFINES, lambda: gemmops_rowwise(rowwise, offsets, out_rowwise))
        if fn is not None:
            pairs["gemmops fp8 row-wise"] = fn
        for label, ab in pairs.items():
            fns[f"{label} with {AB_DEFINES}"] = ab
            written = [out_rowwise if "row-wise" in label else out]
            differs = variants_mismatched({label: fns[label], "with": ab}, written, clear=True)
            notes.append(f"{label} with {AB_DEFINES}: " + ("MISMATCH with its build" if differs else "bitwise equal"))
    fp8_fn()
    torch.cuda.synchronize()
    ref = quantised_reference(*quantised, ends.tolist())
    err = ((out.float() - ref).abs().max() / ref.abs().max().clamp(min=1e-30)).item()
    t = timer.interleaved_medians_us(fns, reps)
    flops = 2.0 * total * N * K
    return {"kind": kind, "shape": f"{G}x{rows} N={N} K={K}", "design": name, "times": t,
            "tflops": {k: flops / v / 1e6 for k, v in t.items()}, "err": err, "notes": notes}


def run_once(design, G, rows, N, K):
    """DeepGEMM's aligned row, run twice (compile, then once more) by our fp8 design whose name holds
    `design` and by DeepGEMM where importable, nothing timed: a run for a profiler to wrap (ncu)."""
    sizes = group_sizes("deepgemm", G, rows)
    A = torch.randn(sum(sizes), K, device="cuda", dtype=torch.bfloat16)
    W = torch.randn(G, N, K, device="cuda", dtype=torch.bfloat16) * 0.05
    offsets = torch.tensor(sizes, dtype=torch.int64).cumsum(0).to(torch.int32).cuda()
    out = torch.empty(A.shape[0], N, device="cuda", dtype=torch.bfloat16)
    name, first, _, others = fp8_candidate(A, W, offsets, out)
    calls = {name.split("f32acc_")[-1]: first, **{k.split("gemmops fp8 ")[-1]: v for k, v in others.items()}}
    chosen = [k for k in calls if design in k]
    if not chosen:
        sys.exit(f"bench_fp8.py --once: no fp8 design holds {design!r}; there are {', '.join(calls)}")
    for _ in range(2):
        calls[chosen[0]]()
    fn, why = deepgemm(A, W, sizes)  # (runs it once itself)
    if fn is not None:
        fn()
    torch.cuda.synchronize()
    print(f"bench_fp8.py --once: ran {chosen[0]} twice" + (", DeepGEMM twice" if fn else f"; DeepGEMM: {why}"))


MASKED = [(4, 256, 4096, 7168), (4, 256, 7168, 2048)]  # DeepGEMM's masked rows: (groups, MaxM, N, K)


def bench_masked_row(timer, G, max_m, N, K, reps):
    """The masked layout, every group full (DeepGEMM's masked benchmark): fp8 against bf16."""
    A = torch.randn(G, max_m, K, device="cuda", dtype=torch.bfloat16)
    W = torch.randn(G, N, K, device="cuda", dtype=torch.bfloat16) * 0.05
    counts = torch.full((G,), max_m, dtype=torch.int32, device="cuda")
    qa, sa = ops.fp8.quantize(A.reshape(G * max_m, K), "block_1x128")
    qw, sw = ops.fp8.quantize(W, "block_128x128")
    sa = ops.OperandScales(sa.scales.reshape(G, max_m, -1), "block_1x128")
    out8 = torch.empty(G, max_m, N, device="cuda", dtype=torch.bfloat16)
    out16 = torch.empty_like(out8)
    name, fp8_fn = first_gpu_operator(ops.GroupedGemmArguments(
        qa.reshape(G, max_m, K), qw.permute(0, 2, 1), out8, accumulator_type="float32", offsets=counts,
        a_scales=sa, b_scales=sw))
    _, bf16_fn = first_gpu_operator(ops.GroupedGemmArguments(A, W.permute(0, 2, 1), out16,
                                                             accumulator_type="float32", offsets=counts))
    fns = {"gemmops fp8": fp8_fn, "gemmops bf16": bf16_fn}
    notes = ["rel err against bf16"]
    fn, why = deepgemm_masked(A, W, counts, max_m)
    if fn is None:
        notes.append(f"DeepGEMM: {why}")
    else:
        fns["DeepGEMM"] = fn
    fp8_fn()
    bf16_fn()
    torch.cuda.synchronize()
    err = ((out8.float() - out16.float()).norm() / out16.float().norm()).item()
    t = timer.interleaved_medians_us(fns, reps)
    flops = 2.0 * G * max_m * N * K
    return {"kind": "masked", "shape": f"{G}x{max_m} N={N} K={K}", "design": name, "times": t,
            "tflops": {k: flops / v / 1e6 for k, v in t.items()}, "err": err, "notes": notes}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", default="deepgemm,uniform,zipf,masked")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--ab-defines", default="", help="also time gemmops' fp8 operators compiled with these "
                   "GEMMOPS_KERNEL_DEFINES (a kernel change behind a define), in the same round-robin")
    p.add_argument("--markdown", default=None, help="also write the table here")
    p.add_argument("--once", default="", metavar="DESIGN",
                   help="time nothing: run the fp8 design whose name holds DESIGN (e.g. 128x192x128_c1x1_s4_coop_tma) "
                        "and DeepGEMM on the first aligned row, twice each (for ncu)")
    a = p.parse_args()
    global AB_DEFINES
    AB_DEFINES = a.ab_defines
    if not torch.cuda.is_available():
        sys.exit("bench_fp8.py: no CUDA device")
    if a.once:
        return run_once(a.once, *SHAPES[0])
    print(f"bench_fp8.py: {torch.cuda.get_device_name()}; torch {torch.__version__}", flush=True)
    timer = Timer(torch.cuda.get_device_properties(0).L2_cache_size)
    cols = ["gemmops fp8", "gemmops bf16", "torch bf16", "gemmops fp8 row-wise", "torch fp8 row-wise", "DeepGEMM"]
    headers = ["rows", "shape"] + [f"{c} us" for c in cols] + ["fp8 TFLOP/s", "fp8 / bf16", "fp8 / torch fp8",
                                                               "row-wise: ours / torch's", "fp8 / DeepGEMM", "rel err"]
    table = []
    for kind in a.rows.split(","):
        for G, rows, N, K in (MASKED if kind == "masked" else SHAPES):
            r = bench_masked_row(timer, G, rows, N, K, a.reps) if kind == "masked" else \
                bench_row(timer, kind, G, rows, N, K, a.reps)
            t = r["times"]
            speed = lambda other: f"{t[other] / t['gemmops fp8']:.2f}x" if other in t else "-"
            table.append([kind, r["shape"]] + [f"{t[c]:.1f}" if c in t else "-" for c in cols] +
                         [f"{r['tflops']['gemmops fp8']:.0f}", speed("gemmops bf16"), speed("torch fp8 row-wise"),
                          (f"{t['torch fp8 row-wise'] / t['gemmops fp8 row-wise']:.2f}x"
                           if "torch fp8 row-wise" in t and "gemmops fp8 row-wise" in t else "-"),
                          speed("DeepGEMM"), f"{r['err']:.1e}"])
            print(f"  {kind} {r['shape']}: " + ", ".join(f"{k} {v:.1f} us" for k, v in t.items()) +
                  f"; {r['design']}; rel err {r['err']:.1e}" + "".join(f"; {n}" for n in r["notes"]), flush=True)
    print(text_table(headers, table))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(markdown_table(headers, table) + "\n")


if __name__ == "__main__":
    main()
