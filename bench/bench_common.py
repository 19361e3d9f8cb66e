# bench/bench_common.py: the torch-free arithmetic of bench_layer.py and bench_host.py (FLOP counts,
# Zipf expert loads and a token assignment that realises them, tables, summaries), tested without a GPU.
# SPDX-License-Identifier: Apache-2.0
import math
import os
import random
import statistics
import subprocess
from collections import namedtuple

from roofline import geometric_mean

# One MoE experts layer: T tokens of width H, E experts of intermediate size I, top-k routing.
# biases: gpt-oss's experts (clamped SwiGLU on interleaved gate/up pairs, a bias on each projection).
LayerConfig = namedtuple("LayerConfig", "key model T E H I topk forward_only biases", defaults=(False,))

# The five layers the issue names (EP8-local: the 32 of DeepSeek-V3's 256 experts one of 8 GPUs holds),
# and Qwen3-30B-A3B at T = 32768, where the training step's throughput target is set.
LAYER_CONFIGS = [
    LayerConfig("qwen3-30b-a3b", "Qwen3-30B-A3B", 8192, 128, 2048, 768, 8, False),
    LayerConfig("deepseek-v3-ep8", "DeepSeek-V3 EP8-local", 4096, 32, 7168, 2048, 8, False),
    LayerConfig("gpt-oss-20b", "gpt-oss-20b", 8192, 32, 2880, 2880, 4, False),
    LayerConfig("mixtral-8x7b", "Mixtral-8x7B", 4096, 8, 4096, 14336, 2, False),
    LayerConfig("qwen3-30b-a3b-decode", "Qwen3-30B-A3B decode", 32, 128, 2048, 768, 8, True),
    LayerConfig("qwen3-30b-a3b-32k", "Qwen3-30B-A3B T=32768", 32768, 128, 2048, 768, 8, False),
    LayerConfig("gpt-oss-20b-biased", "gpt-oss-20b (its gate, biases)", 8192, 32, 2880, 2880, 4, False, True),
]

# --smoke: the same code paths at sizes a CPU runs in seconds (dimensions multiples of 16, as
# torch._grouped_mm asks on CUDA).
SMOKE_CONFIGS = [
    LayerConfig("tiny", "tiny", 64, 8, 64, 32, 2, False),
    LayerConfig("tiny-decode", "tiny decode", 4, 8, 64, 32, 2, True),
    LayerConfig("tiny-biased", "tiny (gpt-oss gate, biases)", 64, 8, 64, 32, 2, False, True),
]

# bench_host.py's problems: M-grouped, A (TotalM, K) @ B[g] (K, N), bf16.
HostProblem = namedtuple("HostProblem", "key G TotalM K N")
HOST_PROBLEMS = [
    HostProblem("decode", 128, 8, 2048, 1536),  # Qwen3-30B-A3B up/gate, 8 tokens: launch-bound
    HostProblem("seed", 12, 8192, 1024, 2048),
    HostProblem("G=128", 128, 65536, 2048, 1536),  # Qwen3-30B-A3B up/gate at T=8192
    HostProblem("G=32", 32, 65536, 2048, 1536),
]
SMOKE_HOST_PROBLEMS = [HostProblem("tiny-decode", 8, 4, 64, 32), HostProblem("tiny", 4, 64, 64, 32)]
HOST_TARGETS_US = {"get_operators": 20.0, "run": 15.0}  # the targets, per call on the host

MODES = ["eager-fwd", "eager-fwd+bwd", "compile-fwd", "compile-fwd+bwd"]
ROUTINGS = ["router", "zipf"]

# bench_grouped.py's "zipf" rows: weights 1/rank^1.2, a quarter of the experts empty.
ZIPF_EXPONENT = 1.2
ZIPF_EMPTY_FRACTION = 0.25


def with_kernel_defines(defines, make):
    """make() with GEMMOPS_KERNEL_DEFINES=defines (none: unset) for the kernels it compiles: a kernel
    change and its baseline compiled in one process (the defines are part of the kernel cache's key),
    then timed in the same round-robin. The variable is unset again afterwards."""
    if defines:
        os.environ["GEMMOPS_KERNEL_DEFINES"] = defines
    else:
        os.environ.pop("GEMMOPS_KERNEL_DEFINES", None)
    try:
        return make()
    finally:
        os.environ.pop("GEMMOPS_KERNEL_DEFINES", None)


def variants_mismatched(variants, written, clear=False):
    """The variants (after the first, the base) whose outputs differ in any bit from the base's: each
    runs once on the same inputs and every written tensor is compared as raw bytes (a kernel define
    that changes no arithmetic must change no bit; garbage the product does not write compares equal,
    as nothing else writes it in between). clear: the written tensors zeroed before each run, so a
    variant that leaves out a part the base writes is told apart too (where no variant reads them)."""
    import torch

    def run(fn):
        if clear:
            for t in written:
                t.zero_()
        fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        return [t.detach().view(torch.uint8).clone() for t in written]

    labels = list(variants)
    base = run(variants[labels[0]])
    return [label for label in labels[1:] if any(not torch.equal(b, t) for b, t in zip(base, run(variants[label])))]


def even_sizes(total, groups):
    """Rows per group as even as whole rows allow, the extra rows spread over the groups (8 rows over
    128 groups: one row in every 16th group)."""
    return [(g + 1) * total // groups - g * total // groups for g in range(groups)]


def select(names_csv, known, what):
    """The items of `known` (keyed by their first field or themselves) named in a comma-separated
    list, in the list's order; an unknown name is an error that lists the known ones."""
    keys = {(k[0] if isinstance(k, tuple) else k): k for k in known}
    picked = []
    for name in (n.strip() for n in names_csv.split(",")):
        if not name:
            continue
        if name not in keys:
            raise ValueError(f"unknown {what} {name!r}; known: {', '.join(keys)}")
        picked.append(keys[name])
    return picked


def layer_gemm_flops(T, topk, H, I, backward=False):
    """FLOPs of the layer's two grouped GEMMs: gate/up (T*topk rows, H -> 2I) and down (I -> H).
    The backward computes each GEMM's two gradients (activations and weights): twice the forward,
    so forward+backward is three times the forward."""
    forward = 2 * T * topk * H * 2 * I + 2 * T * topk * I * H
    return 3 * forward if backward else forward


def zipf_loads(E, total, cap, seed, exponent=ZIPF_EXPONENT, empty_fraction=ZIPF_EMPTY_FRACTION):
    """Rows per expert summing to `total`, in proportion to 1/rank^exponent over randomly permuted
    ranks with a fraction of the experts empty, none above `cap` (with top-k routing an expert
    sees each token at most once, so cap = T: the excess of a capped expert is shared among the
    others in proportion to their weights). Whole rows; the same seed gives the same loads."""
    rng = random.Random(seed)
    ranks = list(range(E))
    rng.shuffle(ranks)
    weights = [1.0 / (r + 1) ** exponent for r in ranks]
    empty = list(range(E))
    rng.shuffle(empty)
    for e in empty[: int(E * empty_fraction)]:
        weights[e] = 0.0
    live = [e for e in range(E) if weights[e] > 0]
    if cap * len(live) < total:
        raise ValueError(f"{total} rows do not fit {len(live)} non-empty experts of at most {cap} rows")
    # Water-filling: experts whose share exceeds the cap get the cap, the rest share what is left.
    capped = set()
    while True:
        free = [e for e in live if e not in capped]
        left = total - cap * len(capped)
        w = sum(weights[e] for e in free)
        over = [e for e in free if left * weights[e] / w > cap]
        if not over:
            break
        capped.update(over)
    exact = [0.0] * E
    for e in live:
        exact[e] = float(cap) if e in capped else left * weights[e] / w
    loads = [min(cap, int(math.floor(x))) for x in exact]
    # The rows lost to rounding go to the largest remainders among experts below the cap.
    order = sorted((e for e in live if loads[e] < cap), key=lambda e: exact[e] - loads[e], reverse=True)
    for i in range(total - sum(loads)):
        loads[order[i % len(order)]] += 1
    return loads


def assign_experts(loads, T, topk, seed):
    """T lists of topk distinct experts in which expert e appears loads[e] times (each load at most
    T, summing to T*topk). The experts' slots are laid out one after another down the token axis,
    column by column (slot p is token p % T's choice p // T): a run of at most T consecutive slots
    never holds a token twice. Tokens are then shuffled, so the loads do not follow token order."""
    if sum(loads) != T * topk or max(loads, default=0) > T:
        raise ValueError(f"loads must sum to T*topk = {T * topk} with none above T = {T}")
    choices = [[0] * topk for _ in range(T)]
    p = 0
    for e in sorted(range(len(loads)), key=lambda e: -loads[e]):
        for _ in range(loads[e]):
            choices[p % T][p // T] = e
            p += 1
    random.Random(seed).shuffle(choices)
    return choices


def ratio_summary(rows):
    """Per mode, the geometric mean of torch/gemmops (above 1: gemmops faster) and its row count;
    and the row with the smallest ratio."""
    per_mode = {}
    for r in rows:
        per_mode.setdefault(r["mode"], []).append(r["ratio"])
    geo = {m: (geometric_mean(v), len(v)) for m, v in per_mode.items()}
    timed = [r for r in rows if not math.isnan(r["ratio"])]
    slowest = min(timed, key=lambda r: r["ratio"]) if timed else None
    return geo, slowest


def summary_lines(rows, what="gemmops"):
    geo, slowest = ratio_summary(rows)
    lines = [f"geometric-mean torch/{what} ({mode}): {g:.3f}x over {n} rows" for mode, (g, n) in geo.items()]
    if slowest is not None:
        lines.append(f"slowest row for {what}: {slowest['config']} {slowest['routing']} {slowest['mode']} "
                     f"({slowest['ratio']:.3f}x)")
    return lines


def first_line(error, limit=200):
    """An exception as one short line: its type and the first line of its message."""
    text = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {text[:limit]}"


def fmt(value, spec):
    """A number formatted with `spec`, or blank when it is missing (NaN or None)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return format(value, spec)


def padded(cells, widths, left=1):
    """One line of cells padded to the widths; the first `left` left-aligned, the others right."""
    return "  ".join(str(c).ljust(w) if i < left else str(c).rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))


def text_table(headers, rows, left=1):
    """Columns padded to their widest cell; the first `left` left-aligned, the others right."""
    cells = [headers] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = [padded(cells[0], widths, left), padded(["-" * w for w in widths], widths, left)]
    return "\n".join(lines + [padded(r, widths, left) for r in cells[1:]])


def markdown_table(headers, rows, left=1):
    """A markdown table; the first `left` columns left-aligned, the others right-aligned."""
    out = ["| " + " | ".join(headers) + " |",
           "|" + "|".join("---" if i < left else "---:" for i in range(len(headers))) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out) + "\n"


def median_per_call(samples, calls):
    """The median over repeats of (a repeat's total time / calls in it)."""
    return statistics.median(s / calls for s in samples)


def meets(value, target, kind="at most"):
    """'yes'/'no' against a target: value at most target (or at least, for kind='at least')."""
    if value is None or target is None or math.isnan(value) or math.isnan(target):
        return ""
    return "yes" if (value <= target if kind == "at most" else value >= target) else "no"


def build_description():
    """Which build was measured: gemmops's version and the checkout's commit (dirty when edited)."""
    import gemmops  # the module itself needs no torch
    try:
        commit = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "describe", "--always",
                                 "--dirty"], capture_output=True, text=True, timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        commit = "unknown"
    return f"gemmops {gemmops.__version__} (checkout {commit})"


def device_or_exit(name, no_device):
    """The torch device to benchmark on: exits with `no_device` when it is CUDA and there is none;
    None (after saying why) when there is one that runs no sm_90a operator. Imports torch and gemmops
    only here, so that the rest of this module stays torch-free."""
    import sys

    import torch

    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        sys.exit(no_device)
    if device.type == "cuda":
        import gemmops

        status = gemmops.device_or_env_supports("90a")
        if not status:
            print(f"skipping: {status.error}")
            return None
    return device


def wait_or_exit(what, seconds):
    """Waits for the CUDA work queued so far; if it does not finish within `seconds`, says what hung
    and exits (a stuck kernel cannot be cancelled, and a silent stall cost a whole benchmark run once)."""
    import time

    import torch

    done = torch.cuda.Event()
    done.record()
    deadline = time.monotonic() + seconds
    while not done.query():
        if time.monotonic() > deadline:
            print(f"HANG: {what} did not finish within {seconds} s; exiting", flush=True)
            os._exit(3)
        time.sleep(0.001)

