#!/usr/bin/env python3
# bench/bench_grouped.py: gemmops grouped GEMM against torch._grouped_mm and dense cuBLAS (torch.mm at
# the same total shape), measured in one process on one GPU. A benchmark, not a test.
#
#   python3 bench/bench_grouped.py [--shapes moe_shapes.csv] [--dists uniform,zipf] [--csv out.csv]
#                                  [--markdown BENCHMARKS.md] [--limit N] [--filter TEXT] [--form fwd|dgrad|wgrad]
#                                  [--sweep sweep.csv [--split-k 1,2,4]] [--ab VAR=VALUE ...]
#                                  [--peers [--quack-tuned]] [--epilogue swiglu [--gate-layout interleaved]]
#                                  [--plot rows.png]
#
# --peers also times QuACK's grouped GEMM (its default config; --quack-tuned adds its autotuned one)
# in the same round-robin when it is importable, adding its time and our speed-up over it to each row
# (bench/peers.py). --epilogue times a fused epilogue op instead (bench/bench_epilogue.py): the fused
# kernel against the plain GEMM, the plain GEMM then the activation in torch, torch._grouped_mm then
# the activation, and with --peers QuACK's fused gemm_act / gemm_gated. --plot draws the speed-ups.
#
# --form fwd (default) times the forward, M-grouped: out (TotalM,N) = A (TotalM,K) @ B[g] (K,N).
# --form wgrad times the weight gradient of the same layer, K-grouped: dB[g] (K,N) = A_g^T @ dOut_g,
# with A^T (K,TotalM) M-major and dOut (TotalM,N) N-major, as autograd hands them over.
# --form dgrad times its data gradient, M-grouped: dA (TotalM,K) = dOut (TotalM,N) @ B[g]^T, reading
# the forward's B storage N-major (the layer's own backward form; a sweep of it fits the ranking there).
# Each timing is the median of graph replays, with L2 scrubbed before every replay.
# --ab GEMMOPS_M_GROUPED_WALK=index also times our operator with that variable set, in the same
# round-robin as the others (an A/B of a kernel option in one process); the CSV gets the times.
# Variables read when the kernel is compiled (a -D option of the JIT, e.g. GEMMOPS_KERNEL_WATCHDOG)
# work too: the A/B candidate compiles its own artifact with the variable set.
# Every row also gets its roofline floor, max(FLOPs / --peak-tflops, bytes / --peak-tbps) (defaults:
# the bf16 dense and copy ceilings measured on an H200), and the summary the geometric-mean speed-up
# over torch that a kernel running every row at its floor would have: how much is left to gain.
# Decode rows (TotalM <= 1024) also time a torch memory pass over the same bytes (forward: a
# reduction reading the weights of the groups with rows; weight gradient: a fill of dB), the rate a
# kernel doing nothing but that traffic reaches at that size.
import argparse
import csv
import math
import os
import statistics
import sys

import torch

import gemmops as ops
from bench_common import wait_or_exit as common_wait_or_exit
from bench_epilogue import EPILOGUE_HEADER, bench_one_epilogue, epilogue_summary, format_epilogue_row, write_epilogue_markdown
from peers import peer_columns, peer_summary, quack_candidates, quack_interface
from plot_rows import plot_rows
from roofline import DECODE_MAX_TOTAL_M, PEAK, geometric_mean, roofline_columns, roofline_summary

# Used when no shapes file is given: the scenarios the performance targets name.
DEFAULT_SHAPES = [
    # model, scenario, G, TotalM, N, K, bound
    ("seed", "seed problem", 12, 8192, 2048, 1024, "compute"),
    ("DeepSeek-V3", "train EP8 up/gate", 32, 16384, 4096, 7168, "compute"),
    ("Qwen3-30B-A3B", "train T=4096 up/gate", 128, 32768, 1536, 2048, "compute"),
    ("gpt-oss-120b", "train up/gate", 128, 16384, 5760, 2880, "compute"),
    ("DeepSeek-V3", "decode 512 rows up/gate", 64, 512, 4096, 7168, "memory"),
]


def load_shapes(path):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            rows.append((r["model"], f'{r["scenario"]} {r["proj"]}', int(r["G"]), int(r["TotalM"]),
                         int(r["N"]), int(r["K"]), r["bound"]))
    return rows


def group_sizes(total, groups, dist, gen):
    """Token counts per group summing to `total` (distributions.md: D0 uniform, D1 routed (each row to
    a group drawn uniformly: multinomial counts, as routing's noise leaves them), D3 Zipf s=1.2 with a
    quarter of the groups empty, D7 decode sparse)."""
    if dist == "routed" and groups > 1:
        picks = torch.randint(groups, (total,), generator=gen)
        return torch.bincount(picks, minlength=groups).tolist()
    if dist == "uniform" or groups == 1:
        base = [total // groups] * groups
        for i in range(total - sum(base)):
            base[i] += 1
        return base
    if dist == "zipf":
        ranks = torch.randperm(groups, generator=gen).tolist()
        w = [1.0 / (r + 1) ** 1.2 for r in ranks]
        empty = torch.randperm(groups, generator=gen)[: groups // 4].tolist()
        for e in empty:
            w[e] = 0.0
        s = sum(w)
        sizes = [int(total * x / s) for x in w]
        nonzero = [i for i in range(groups) if w[i] > 0]
        for i in range(total - sum(sizes)):
            sizes[nonzero[i % len(nonzero)]] += 1
        return sizes
    raise ValueError(f"unknown distribution {dist}")


HANG_SECONDS = 60  # no single launch here takes a second; a kernel still running after this is stuck


def wait_or_exit(name):
    """Waits for the work queued so far; exits naming the candidate and row if it hangs."""
    common_wait_or_exit(f"{name} ({CURRENT_ROW})", HANG_SECONDS)


CURRENT_ROW = ""  # the row being timed, for the hang report


class Timer:
    """Medians of CUDA-graph replays, L2 scrubbed before each. The candidates of one row are replayed
    round-robin, so clock and power drift over the row reach all of them alike (timed one after
    another, the same kernel moved by up to 15% between a row's first and last timing)."""

    def __init__(self, l2_bytes):
        self.scrub = torch.empty(max(2 * l2_bytes, 256 << 20), dtype=torch.uint8, device="cuda")

    def interleaved_medians_us(self, fns, reps=30):
        replays = {}
        for name, fn in fns.items():
            fn()  # compile / warm up outside the capture
            wait_or_exit(name)
            replays[name] = self.captured(name, fn)
        times = {name: [] for name in replays}
        for _ in range(reps):
            for name, replay in replays.items():
                self.scrub.zero_()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                replay()
                end.record()
                end.synchronize()
                times[name].append(start.elapsed_time(end) * 1e3)
        return {name: statistics.median(t) for name, t in times.items()}

    EAGER = set()  # candidates that could not be captured, timed eagerly (their host time included)

    def captured(self, name, fn):
        """A graph replay of fn; fn itself when it cannot be captured (a peer library may not allow it),
        which the run then says."""
        g = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(g, stream=torch.cuda.Stream()):
                fn()
        except Exception as e:  # noqa: BLE001 - any capture failure means eager timing
            torch.cuda.synchronize()
            if name not in Timer.EAGER:
                print(f"  {name}: not capturable ({type(e).__name__}), timed eagerly", flush=True)
            Timer.EAGER.add(name)
            return fn
        return g.replay


def timed_row(shape, dist, scenario, op, t, flops, bytes_moved, err, repro, t_memory=float("nan")):
    """A row's columns from its timings `t` ("ours", "ours again", "torch" (nan where torch refused),
    "dense", and the A/B candidates): times, rates, the roofline's and the speed-ups."""
    model, _, G, M, N, K, bound = shape
    t_ops, t_torch, t_dense = t["ours"], t.get("torch", float("nan")), t["dense"]
    return {
        "model": model, "scenario": scenario, "dist": dist, "G": G, "TotalM": M, "N": N, "K": K, "bound": bound,
        "operator": op.name, "gemmops_us": t_ops, "gemmops_repeat_us": t["ours again"], "torch_us": t_torch,
        "dense_us": t_dense,
        "gemmops_tflops": flops / t_ops / 1e6, "torch_tflops": flops / t_torch / 1e6, "dense_tflops": flops / t_dense / 1e6,
        "gemmops_tbps": bytes_moved / t_ops / 1e6, "speedup_vs_torch": t_torch / t_ops,
        "frac_of_dense": t_dense / t_ops, "rel_err": err,
        **roofline_columns(flops, bytes_moved, t_ops, t_torch, t_memory),
        "repro": repro, **ab_columns(t, t_ops),
    }


def bench_one(timer, shape, dist, gen, check=True):
    model, scenario, G, M, N, K, bound = shape
    sizes = group_sizes(M, G, dist, gen)
    A = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    B = torch.randn(G, N, K, device="cuda", dtype=torch.bfloat16).permute(0, 2, 1)  # (G, K, N), K-major
    ends = torch.tensor(sizes, dtype=torch.int64).cumsum(0)
    offsets = ends.to(torch.int32).cuda()
    out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)

    args = ops.GroupedGemmArguments(A, B, out, accumulator_type=torch.float32, offsets=offsets)
    op = ops.get_operators(args)[0]
    sweep_operators(timer, args, shape, dist, "fwd")
    artifact = op.compile(args)
    W = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
    run_ops = lambda: op.run(args, compiled_artifact=artifact)
    # Weight bytes actually read: only groups with rows are touched.
    weight_bytes = sum(1 for s in sizes if s > 0) * K * N * 2
    memory_pass = {}
    if M <= DECODE_MAX_TOTAL_M:  # as many bytes as the groups with rows hold, read once
        weights = B.permute(0, 2, 1).reshape(-1)[: weight_bytes // 2]
        memory_pass["memory pass"] = lambda: weights.sum(dtype=torch.float32)
    t = timer.interleaved_medians_us({
        "ours": run_ops, "ours again": run_ops,  # the same kernel twice: the row's noise
        "torch": lambda: torch._grouped_mm(A, B, offs=offsets, out_dtype=torch.bfloat16),
        "dense": lambda: torch.mm(A, W), **memory_pass, **ab_candidates(op, args),
        **(quack_candidates(A, B, offsets, QUACK_TUNED) if PEERS else {})})

    err = float("nan")
    if check:
        ref = torch._grouped_mm(A, B, offs=offsets, out_dtype=torch.bfloat16).float()
        rows = int(ends[-1])
        err = ((out[:rows].float() - ref[:rows]).norm() / ref[:rows].norm().clamp_min(1e-30)).item()
    flops = 2.0 * M * N * K
    bytes_moved = weight_bytes + M * K * 2 + M * N * 2
    return {**timed_row(shape, dist, scenario, op, t, flops, bytes_moved, err,
                        f"python3 bench/bench_grouped.py --filter '{model}' --dists {dist}",
                        t.get("memory pass", float("nan"))),
            **(peer_columns(t, t["ours"], flops) if PEERS else {})}


def bench_one_wgrad(timer, shape, dist, gen, check=True):
    model, scenario, G, M, N, K, bound = shape
    sizes = group_sizes(M, G, dist, gen)
    X = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    dY = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
    offsets = torch.tensor(sizes, dtype=torch.int64).cumsum(0).to(torch.int32).cuda()
    out = torch.empty(G, K, N, device="cuda", dtype=torch.bfloat16)

    args = ops.GroupedGemmArguments(X.t(), dY, out, accumulator_type=torch.float32, offsets=offsets)
    op = ops.get_operators(args)[0]
    sweep_operators(timer, args, shape, dist, "wgrad")
    artifact = op.compile(args)
    run_ops = lambda: op.run(args, compiled_artifact=artifact)
    candidates = {"ours": run_ops, "ours again": run_ops, "dense": lambda: torch.mm(X.t(), dY), **ab_candidates(op, args)}
    if M <= DECODE_MAX_TOTAL_M:  # dB's bytes written once (its writes are nearly all the traffic)
        scratch = torch.empty_like(out)  # not out: its values are checked after the timing
        candidates["memory pass"] = lambda: scratch.fill_(0.5)
    torch_wgrad = lambda: torch._grouped_mm(X.t(), dY, offs=offsets, out_dtype=torch.bfloat16)
    try:
        torch_wgrad()
        candidates["torch"] = torch_wgrad
    except RuntimeError as e:  # said in the row, not hidden
        print(f"  torch._grouped_mm refused: {str(e).splitlines()[0][:120]}")
    t = timer.interleaved_medians_us(candidates)

    err = float("nan")
    if check and "torch" in t:
        ref = torch._grouped_mm(X.t(), dY, offs=offsets, out_dtype=torch.bfloat16).float()
        err = ((out.float() - ref).norm() / ref.norm().clamp_min(1e-30)).item()
    flops = 2.0 * M * N * K
    bytes_moved = M * K * 2 + M * N * 2 + G * K * N * 2  # both activations read once, every dB written
    return timed_row(shape, dist, scenario + " wgrad", op, t, flops, bytes_moved, err,
                     f"python3 bench/bench_grouped.py --form wgrad --filter '{model}' --dists {dist}",
                     t.get("memory pass", float("nan")))


def bench_one_dgrad(timer, shape, dist, gen, check=True):
    """The data gradient of the forward's shape, M-grouped: dX (TotalM, K) = dY (TotalM, N) @ W[g]^T with
    W stored (G, N, K) as the forward reads it K-major, so this product reads it N-major (the MoE step's
    up projection's data gradient and the down projection's dgrad)."""
    model, scenario, G, M, N, K, bound = shape
    sizes = group_sizes(M, G, dist, gen)
    dY = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
    W = torch.randn(G, N, K, device="cuda", dtype=torch.bfloat16)  # the forward's B storage: (G, K, N) K-major
    ends = torch.tensor(sizes, dtype=torch.int64).cumsum(0)
    offsets = ends.to(torch.int32).cuda()
    out = torch.empty(M, K, device="cuda", dtype=torch.bfloat16)
    args = ops.GroupedGemmArguments(dY, W, out, accumulator_type=torch.float32, offsets=offsets)
    op = ops.get_operators(args)[0]
    sweep_operators(timer, args, shape, dist, "dgrad")
    artifact = op.compile(args)
    run_ops = lambda: op.run(args, compiled_artifact=artifact)
    Wd = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
    t = timer.interleaved_medians_us({
        "ours": run_ops, "ours again": run_ops,
        "torch": lambda: torch._grouped_mm(dY, W, offs=offsets, out_dtype=torch.bfloat16),
        "dense": lambda: torch.mm(dY, Wd), **ab_candidates(op, args)})
    err = float("nan")
    if check:
        ref = torch._grouped_mm(dY, W, offs=offsets, out_dtype=torch.bfloat16).float()
        rows = int(ends[-1])
        err = ((out[:rows].float() - ref[:rows]).norm() / ref[:rows].norm().clamp_min(1e-30)).item()
    flops = 2.0 * M * N * K
    bytes_moved = sum(1 for s_ in sizes if s_ > 0) * K * N * 2 + M * N * 2 + M * K * 2
    return timed_row(shape, dist, scenario + " dgrad", op, t, flops, bytes_moved, err,
                     f"python3 bench/bench_grouped.py --form dgrad --filter '{model}' --dists {dist}")


DESIGNS = []  # with --designs: the parts of the operator names a sweep keeps
SWEEP = []  # with --sweep: (form, model, scenario, dist, G, TotalM, N, K, operator, heuristic rank, us)


SPLITS = None  # with --split-k: the split factors each of the first operators is timed with


AB = []  # with --ab: (variable, value) pairs our operator is also timed with


PEERS = False  # with --peers: QuACK's grouped GEMM timed in the same round-robin (when importable)
QUACK_TUNED = False  # with --quack-tuned: also QuACK autotuned (its first call of a shape tunes)


def with_env(fn, name, value):
    """fn run with the variable set: GEMMOPS_* values are read at launch, so a captured graph keeps them."""
    def run():
        old = os.environ.get(name)
        os.environ[name] = str(value)
        try:
            return fn()
        finally:
            if old is None:
                del os.environ[name]
            else:
                os.environ[name] = old
    return run


def with_split(fn, splits):
    return with_env(fn, "GEMMOPS_SPLIT_K", splits)


def ab_candidates(op, args):
    """Our operator with each A/B variable set while it compiles (here, outside any graph capture)
    and while it launches, so options of either kind take effect."""
    cands = {}
    for name, value in AB:
        artifact = with_env(lambda: op.compile(args), name, value)()
        cands[f"ours {name}={value}"] = with_env(lambda a=artifact: op.run(args, compiled_artifact=a), name, value)
    return cands


def ab_columns(t, t_ops):
    """The A/B times and their ratio to ours (above 1: the default is faster)."""
    cols = {}
    for name, value in AB:
        us = t[f"ours {name}={value}"]
        cols[f"ab {name}={value} us"] = us
        cols[f"ab {name}={value} ratio"] = us / t_ops
    return cols


def sweep_operators(timer, args, shape, dist, form):
    """With --sweep, times every operator get_operators() offers (the data the heuristic is fitted to);
    with --split-k, the first four instead, each with K split every way listed."""
    if SWEEP is None:
        return
    model, scenario, G, M, N, K, _ = shape
    candidates = ops.get_operators(args)
    ranks_all = {o.name: rank for rank, o in enumerate(candidates)}
    if DESIGNS:  # --designs: only these (the ranks stay the full ranking's)
        candidates = [o for o in candidates if any(d in o.name for d in DESIGNS)]
    runs = {}
    ranks = {}
    for o in (candidates if SPLITS is None else candidates[:4]):
        rank = ranks_all[o.name]
        art = o.compile(args)
        fn = lambda o=o, art=art: o.run(args, compiled_artifact=art)
        if SPLITS is None:
            runs[o.name], ranks[o.name] = fn, rank
        else:
            for sp in SPLITS:
                runs[f"{o.name}+split{sp}"], ranks[f"{o.name}+split{sp}"] = with_split(fn, sp), rank
    t = timer.interleaved_medians_us(runs, reps=10)
    for name, us in t.items():
        SWEEP.append((form, model, scenario, dist, G, M, N, K, name, ranks[name], us))
        print(f"    sweep {name:<68} rank {ranks[name]} {us:9.1f} us", flush=True)


def main():
    global CURRENT_ROW
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--shapes", help="moe_shapes.csv (model,scenario,proj,G,TotalM,N,K,bound)")
    ap.add_argument("--dists", default="uniform,zipf", help="comma-separated: uniform (exact), routed (multinomial counts, as routing leaves them), zipf")
    ap.add_argument("--filter", default="")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--max-total-m", type=int, default=0, help="only rows with TotalM at most this")
    ap.add_argument("--csv")
    ap.add_argument("--markdown")
    ap.add_argument("--form", choices=["fwd", "dgrad", "wgrad"], default="fwd")
    ap.add_argument("--sweep", help="also time every candidate operator of every row; CSV of them to this path")
    ap.add_argument("--designs", help="with --sweep: only the operators whose names contain one of these "
                    "comma-separated parts (e.g. 128x192x64_c1x1_s5_pingpong,192x128); ranks stay the full ranking's")
    ap.add_argument("--split-k", help="with --sweep: time the first four operators with K split these ways, e.g. 1,2,4")
    ap.add_argument("--ab", action="append", default=[], metavar="VAR=VALUE",
                    help="also time our operator with this GEMMOPS_* variable set (repeatable)")
    ap.add_argument("--peers", action="store_true", help="also time QuACK (default config) when importable")
    ap.add_argument("--quack-tuned", action="store_true", help="with --peers: also QuACK autotuned (slow first call)")
    ap.add_argument("--epilogue", choices=["silu", "gelu_tanh", "relu_squared", "swiglu", "swiglu_oss"],
                    help="time this fused epilogue op against the plain GEMM and the unfused ways (forward only)")
    ap.add_argument("--gate-layout", choices=["concatenated", "interleaved"], default="concatenated")
    ap.add_argument("--plot", help="a PNG of each row's speed-ups (over torch, and QuACK with --peers)")
    ap.add_argument("--peak-tflops", type=float, default=784.0, help="the roofline's compute rate (H200 bf16 dense)")
    ap.add_argument("--peak-tbps", type=float, default=4.2, help="the roofline's memory rate (H200 copy)")
    a = ap.parse_args()
    PEAK.update(flops=a.peak_tflops * 1e12, bytes=a.peak_tbps * 1e12)
    global SWEEP, SPLITS, DESIGNS
    DESIGNS = [d for d in a.designs.split(",") if d] if a.designs else []
    AB[:] = [tuple(x.split("=", 1)) for x in a.ab]
    SWEEP = [] if a.sweep else None
    SPLITS = [int(x) for x in a.split_k.split(",")] if a.split_k else None
    global PEERS, QUACK_TUNED
    PEERS, QUACK_TUNED = a.peers, a.quack_tuned
    run_one = {"fwd": bench_one, "dgrad": bench_one_dgrad, "wgrad": bench_one_wgrad}[a.form]
    if a.epilogue:
        if a.form != "fwd":
            ap.error("--epilogue times the forward (M-grouped) form only")
        run_one = lambda timer, shape, dist, gen: bench_one_epilogue(
            timer, shape, dist, gen, group_sizes, a.epilogue, a.gate_layout, a.peers, a.quack_tuned)
    if a.peers:
        qi, why = quack_interface()
        print("peers: QuACK " + ("importable" if qi else f"not importable ({why}): its columns stay empty"))
    status = ops.utils.device.device_or_env_supports("90a")
    if not status:
        print(f"skipping: {status.error}")
        return 0
    shapes = load_shapes(a.shapes) if a.shapes and os.path.exists(a.shapes) else DEFAULT_SHAPES
    shapes = [s for s in shapes if a.filter in f"{s[0]} {s[1]}" and (not a.max_total_m or s[3] <= a.max_total_m)]
    if a.limit:
        shapes = shapes[: a.limit]
    props = torch.cuda.get_device_properties(0)
    timer = Timer(getattr(props, "L2_cache_size", 50 << 20))
    gen = torch.Generator().manual_seed(0)
    rows = []
    hdr = f"{'model':<16}{'scenario':<34}{'dist':<8}{'G':>5}{'TotalM':>7}{'N':>6}{'K':>6} {'ours us':>8}{'torch us':>9}{'dense us':>9}{'TFLOP/s':>8}{'x torch':>8}{'of dense':>9}{'TB/s':>6} err"
    print(EPILOGUE_HEADER if a.epilogue else hdr)
    for shape in shapes:
        for dist in a.dists.split(","):
            CURRENT_ROW = f"{shape[0]} {shape[1]} {dist} G={shape[2]} TotalM={shape[3]} N={shape[4]} K={shape[5]} {a.form}"
            try:
                r = run_one(timer, shape, dist, gen)
            except Exception as e:  # a row that fails is reported, the rest still run
                print(f"{shape[0]:<16}{shape[1][:33]:<34}{dist:<8} FAILED: {e}")
                continue
            rows.append(r)
            write_outputs(a, rows, props.name)
            if a.sweep:
                with open(a.sweep, "w", newline="") as f:
                    w = csv.writer(f)
                    w.writerow(["form", "model", "scenario", "dist", "G", "TotalM", "N", "K", "operator", "rank", "us"])
                    w.writerows(SWEEP)  # after every row: a cut-short run still leaves its numbers
            if a.epilogue:
                print(format_epilogue_row(r), flush=True)
                continue
            print(f"{r['model'][:15]:<16}{r['scenario'][:33]:<34}{dist:<8}{r['G']:>5}{r['TotalM']:>7}{r['N']:>6}{r['K']:>6} "
                  f"{r['gemmops_us']:>8.1f}{r['torch_us']:>9.1f}{r['dense_us']:>9.1f}{r['gemmops_tflops']:>8.0f}"
                  f"{r['speedup_vs_torch']:>8.2f}{r['frac_of_dense']:>9.2f}{r['gemmops_tbps']:>6.2f} {r['rel_err']:.1e}"
                  + "".join(f" | {n}={v}: {r[f'ab {n}={v} ratio']:.3f}" for n, v in AB), flush=True)
    if rows and a.plot:
        plot_rows(rows, a.plot, props.name)
    if rows and a.epilogue:
        print(epilogue_summary(rows, geometric_mean))
    elif rows:
        geo = geometric_mean([r["speedup_vs_torch"] for r in rows])
        slower = sum(1 for r in rows if r["speedup_vs_torch"] < 1.0)
        noise = statistics.median(abs(r["gemmops_repeat_us"] / r["gemmops_us"] - 1) for r in rows)
        print(f"geometric-mean speed-up vs torch._grouped_mm: {geo:.3f}x over {len(rows)} rows; slower rows: {slower}; "
              f"median repeat spread of our timing: {100 * noise:.1f}%")
        print(roofline_summary(rows))
        if PEERS:
            print(peer_summary(rows, geometric_mean))
        for n, v in AB:  # per distribution: an option may pay off on skewed rows only
            for dist in a.dists.split(","):
                ratios = [r[f"ab {n}={v} ratio"] for r in rows if r["dist"] == dist]
                if ratios:
                    print(f"A/B {n}={v} ({dist}): its time over ours, geometric mean {geometric_mean(ratios):.3f} over "
                          f"{len(ratios)} rows (min {min(ratios):.3f}, max {max(ratios):.3f})")
    return 0


def write_outputs(a, rows, device):
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)
    if a.markdown and a.epilogue:
        write_epilogue_markdown(a.markdown, rows, device, geometric_mean)
    elif a.markdown:
        write_markdown(a.markdown, rows, device)


def peer_cells(r):
    us, x = r.get("quack_us", float("nan")), r.get("speedup_vs_quack", float("nan"))
    return ("| | " if us != us else f"{us:.1f} | {x:.2f} | ")


def write_markdown(path, rows, device):
    geo = geometric_mean([r["speedup_vs_torch"] for r in rows])
    slower = sum(1 for r in rows if r["speedup_vs_torch"] < 1.0)
    with open(path, "w") as f:
        f.write(f"# Benchmarks\n\nbf16 in/out, fp32 accumulate, B K-major; {device}; torch {torch.__version__}; "
                "medians of 30 CUDA-graph replays with L2 scrubbed before each, gemmops, torch and dense replayed in turn. Generated by bench/bench_grouped.py.\n\n")
        noise = statistics.median(abs(r["gemmops_repeat_us"] / r["gemmops_us"] - 1) for r in rows)
        f.write(f"Geometric-mean speed-up over torch._grouped_mm: **{geo:.2f}x** over {len(rows)} rows; "
                f"{slower} row{'' if slower == 1 else 's'} slower. Two timings of the same gemmops "
                f"kernel in one row differ by {100 * noise:.1f}% (median): smaller differences are noise.\n\n")
        f.write(roofline_summary(rows) + " Columns: *of floor* is the row's floor over our time; *pass TB/s* "
                "the memory pass's rate on decode rows.\n\n")
        peers = any(r.get("quack_us", float("nan")) == r.get("quack_us") for r in rows)
        if peers:
            f.write(peer_summary(rows, geometric_mean) + ".\n\n")
        f.write("| model | scenario | dist | G | TotalM | N | K | gemmops us | torch us | dense us | TFLOP/s | x torch | of dense | TB/s | of floor | pass TB/s |"
                + (" QuACK us | x QuACK |" if peers else "") + " operator |\n")
        f.write("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if peers else "") + "---|\n")
        for r in rows:
            pass_tbps = "" if math.isnan(r["memory_pass_tbps"]) else f"{r['memory_pass_tbps']:.2f}"
            f.write(f"| {r['model']} | {r['scenario']} | {r['dist']} | {r['G']} | {r['TotalM']} | {r['N']} | {r['K']} | "
                    f"{r['gemmops_us']:.1f} | {r['torch_us']:.1f} | {r['dense_us']:.1f} | {r['gemmops_tflops']:.0f} | "
                    f"{r['speedup_vs_torch']:.2f} | {r['frac_of_dense']:.2f} | {r['gemmops_tbps']:.2f} | "
                    f"{r['of_roofline']:.2f} | {pass_tbps} | " + (peer_cells(r) if peers else "") + f"`{r['operator']}` |\n")


if __name__ == "__main__":
    sys.exit(main())
