# bench/bench_epilogue.py: one row of bench_grouped.py --epilogue: the fused epilogue op (SwiGLU, SiLU,
# ...) against the same GEMM stored plain, plain then the activation in torch, torch._grouped_mm then
# the activation, and QuACK's fused gemm_act/gemm_gated when importable; all in one round-robin.
# SPDX-License-Identifier: Apache-2.0
import torch

import gemmops as ops
from gemmops.torch.moe import apply_activation
from peers import peer_columns, quack_candidates

GATED = ("swiglu", "swiglu_oss")


def grouped_reference_fp32(A, B, offsets):
    """The M-grouped product in float32, group by group (torch._grouped_mm refuses a float32 out_dtype
    for bf16 operands)."""
    out = torch.zeros(A.shape[0], B.shape[2], device=A.device, dtype=torch.float32)
    start = 0
    for g, end in enumerate(offsets.tolist()):
        if end > start:
            out[start:end] = A[start:end].float() @ B[g].float()
        start = end
    return out

def torch_activation(y, activation, gate_layout="concatenated"):
    """The op's meaning in torch, in fp32 (include/gemmops/epilogue.hpp): y is the (rows, N) product."""
    return apply_activation(y.float(), activation, gate_layout)


def bench_one_epilogue(timer, shape, dist, gen, group_sizes, activation, gate_layout, peers=False, quack_tuned=False):
    model, scenario, G, M, N, K, bound = shape
    gated = activation in GATED
    if gated and N % 2:
        raise ValueError(f"N = {N} is odd: a gated activation pairs columns")
    sizes = group_sizes(M, G, dist, gen)
    A = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    B = torch.randn(G, N, K, device="cuda", dtype=torch.bfloat16).permute(0, 2, 1)  # (G, K, N), K-major
    offsets = torch.tensor(sizes, dtype=torch.int64).cumsum(0).to(torch.int32).cuda()
    n_out = N // 2 if gated else N
    fused_out = torch.empty(M, n_out, device="cuda", dtype=torch.bfloat16)
    plain_out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)

    epi = ops.EpilogueOps(activation=activation, gate_layout=gate_layout)
    fused_args = ops.GroupedGemmArguments(A, B, fused_out, accumulator_type=torch.float32, offsets=offsets,
                                          epilogue=epi)
    plain_args = ops.GroupedGemmArguments(A, B, plain_out, accumulator_type=torch.float32, offsets=offsets)
    fused_op, plain_op = ops.get_operators(fused_args)[0], ops.get_operators(plain_args)[0]
    fused_art, plain_art = fused_op.compile(fused_args), plain_op.compile(plain_args)
    run_fused = lambda: fused_op.run(fused_args, compiled_artifact=fused_art)
    run_plain = lambda: plain_op.run(plain_args, compiled_artifact=plain_art)
    act = lambda y: torch_activation(y, activation, gate_layout).to(torch.bfloat16)
    cands = {
        "fused": run_fused, "fused again": run_fused,
        "plain": run_plain,
        "plain + torch act": lambda: (run_plain(), act(plain_out)),
        "torch + act": lambda: act(torch._grouped_mm(A, B, offs=offsets, out_dtype=torch.bfloat16)),
    }
    if peers:
        cands.update(quack_candidates(A, B, offsets, quack_tuned, epilogue=activation, gate_layout=gate_layout))
    t = timer.interleaved_medians_us(cands)

    rows = int(offsets[-1])
    ref = act(grouped_reference_fp32(A, B, offsets))[:rows].float()
    got = fused_out[:rows].float()
    err = ((got - ref).norm() / ref.norm().clamp_min(1e-30)).item()
    flops = 2.0 * M * N * K
    t_fused = t["fused"]
    return {
        "model": model, "scenario": scenario, "dist": dist, "G": G, "TotalM": M, "N": N, "K": K, "bound": bound,
        "activation": activation, "gate_layout": gate_layout if gated else "",
        "operator": fused_op.name, "fused_us": t_fused, "fused_repeat_us": t["fused again"], "plain_us": t["plain"],
        "plain_torch_act_us": t["plain + torch act"], "torch_act_us": t["torch + act"],
        "fused_over_plain": t_fused / t["plain"], "speedup_vs_plain_torch_act": t["plain + torch act"] / t_fused,
        "speedup_vs_torch": t["torch + act"] / t_fused, "fused_tflops": flops / t_fused / 1e6, "rel_err": err,
        **peer_columns(t, t_fused, flops),
    }


EPILOGUE_HEADER = (f"{'model':<16}{'scenario':<34}{'dist':<8}{'G':>5}{'TotalM':>7}{'N':>6}{'K':>6} {'fused us':>9}"
                   f"{'plain us':>9}{'+act us':>9}{'torch+act':>10}{'quack us':>9}{'/plain':>7}{'x torch':>8} err")


def format_epilogue_row(r):
    return (f"{r['model'][:15]:<16}{r['scenario'][:33]:<34}{r['dist']:<8}{r['G']:>5}{r['TotalM']:>7}{r['N']:>6}{r['K']:>6} "
            f"{r['fused_us']:>9.1f}{r['plain_us']:>9.1f}{r['plain_torch_act_us']:>9.1f}{r['torch_act_us']:>10.1f}"
            f"{r['quack_us']:>9.1f}{r['fused_over_plain']:>7.3f}{r['speedup_vs_torch']:>8.2f} {r['rel_err']:.1e}")


def epilogue_summary(rows, geometric_mean):
    """The fused op's cost over the plain store, and its speed-up over the unfused ways, as geometric means."""
    g = lambda key: geometric_mean([r[key] for r in rows])
    text = (f"{rows[0]['activation']} {rows[0]['gate_layout']}: fused over plain {g('fused_over_plain'):.3f}x "
            f"(max {max(r['fused_over_plain'] for r in rows):.3f}); speed-up over plain + torch activation "
            f"{g('speedup_vs_plain_torch_act'):.2f}x, over torch._grouped_mm + activation {g('speedup_vs_torch'):.2f}x "
            f"over {len(rows)} rows")
    quack = [r["speedup_vs_quack"] for r in rows if r["speedup_vs_quack"] == r["speedup_vs_quack"]]
    if quack:
        text += f"; over QuACK's fused op {geometric_mean(quack):.2f}x ({len(quack)} rows)"
    return text + "."


def write_epilogue_markdown(path, rows, device, geometric_mean):
    with open(path, "w") as f:
        f.write(f"# Fused epilogue ops\n\nbf16 in/out, fp32 accumulate, B K-major; {device}; torch {torch.__version__}; "
                "medians of 30 CUDA-graph replays with L2 scrubbed before each, all candidates of a row in turn. "
                "Generated by bench/bench_grouped.py --epilogue.\n\n" + epilogue_summary(rows, geometric_mean) + "\n\n")
        f.write("| model | scenario | dist | G | TotalM | N | K | fused us | plain us | plain + act us | torch + act us "
                "| QuACK us | fused / plain | x torch | err | operator |\n")
        f.write("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
        for r in rows:
            quack = "" if r["quack_us"] != r["quack_us"] else f"{r['quack_us']:.1f}"
            f.write(f"| {r['model']} | {r['scenario']} | {r['dist']} | {r['G']} | {r['TotalM']} | {r['N']} | {r['K']} | "
                    f"{r['fused_us']:.1f} | {r['plain_us']:.1f} | {r['plain_torch_act_us']:.1f} | {r['torch_act_us']:.1f} | "
                    f"{quack} | {r['fused_over_plain']:.3f} | {r['speedup_vs_torch']:.2f} | {r['rel_err']:.1e} | "
                    f"`{r['operator']}` |\n")
