# bench/peers.py: the peer libraries a benchmark times beside gemmops in the same process, when they are
# importable (QuACK's grouped GEMM, plain and with a gated epilogue). gemmops never depends on them.
# SPDX-License-Identifier: Apache-2.0
import importlib


def quack_interface():
    """QuACK's gemm_interface module, or None with the reason it could not be imported."""
    try:
        return importlib.import_module("quack.gemm_interface"), ""
    except Exception as e:  # not installed, or its DSL libraries missing: the rows say so
        return None, f"{type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''}"


def cu_seqlens(offsets):
    """QuACK's (G+1,) int32 group starts with a leading 0, from gemmops' (G,) exclusive ends."""
    import torch

    return torch.cat([torch.zeros(1, dtype=torch.int32, device=offsets.device), offsets.to(torch.int32)])


# gemmops activation -> QuACK's name of the gated activation (interleaved gate/up columns by
# default; concat_layout asks for [gate; up] halves).
QUACK_GATED = {"swiglu": "swiglu", "swiglu_oss": "swiglu_oai"}
QUACK_ACT = {"silu": "silu", "gelu_tanh": "gelu_tanh_approx", "relu_squared": "relu_sq"}


def quack_candidates(A, B, offsets, tuned_too=False, epilogue=None, gate_layout="interleaved"):
    """{name: callable} of QuACK on A (TotalM,K) @ B[g] (K,N) with gemmops' offsets: its default
    config ("quack") and, with tuned_too, its autotuned one ("quack tuned": 7-27 s of tuning on the
    first call of a shape, done here, before any timing). With a gated epilogue (gemmops' activation
    name) QuACK's gemm_gated without the pre-activation store; an activation it lacks gives {}.
    Empty when QuACK is not importable."""
    qi, _ = quack_interface()
    if qi is None:
        return {}
    cu = cu_seqlens(offsets)
    if epilogue in QUACK_GATED:
        kw = dict(activation=QUACK_GATED[epilogue], store_preact=False, cu_seqlens_m=cu)
        if gate_layout == "concatenated":
            kw["concat_layout"] = ("B",)
        call = lambda tuned: qi.gemm_act(A, B, tuned=tuned, **kw)[1]
    elif epilogue in QUACK_ACT:
        kw = dict(activation=QUACK_ACT[epilogue], store_preact=False, cu_seqlens_m=cu)
        call = lambda tuned: qi.gemm_act(A, B, tuned=tuned, **kw)[1]
    elif epilogue in (None, "none"):
        call = lambda tuned: qi.gemm(A, B, cu_seqlens_m=cu, tuned=tuned)
    else:
        return {}
    cands = {"quack": lambda: call(False)}
    if tuned_too:
        cands["quack tuned"] = lambda: call(True)
    return cands


def peer_columns(t, t_ops, flops):
    """The row's peer times (us), TFLOP/s and our speed-up over each (above 1: gemmops is faster)."""
    cols = {}
    for name in ("quack", "quack tuned"):
        us = t.get(name, float("nan"))
        key = name.replace(" ", "_")
        cols[f"{key}_us"] = us
        cols[f"{key}_tflops"] = flops / us / 1e6 if us == us else float("nan")
        cols[f"speedup_vs_{key}"] = us / t_ops if us == us else float("nan")
    return cols


def peer_summary(rows, geometric_mean):
    """Per peer: our geometric-mean speed-up over it, its slowest row for us, and how many rows we lose."""
    parts = []
    for key, label in (("quack", "QuACK (default config)"), ("quack_tuned", "QuACK (autotuned)")):
        pairs = [(r[f"speedup_vs_{key}"], r) for r in rows if r.get(f"speedup_vs_{key}", float("nan")) == r.get(f"speedup_vs_{key}")]
        if not pairs:
            continue
        worst, wr = min(pairs, key=lambda p: p[0])
        slower = sum(1 for x, _ in pairs if x < 1.0)
        parts.append(f"speed-up over {label}: {geometric_mean([x for x, _ in pairs]):.3f}x over {len(pairs)} rows, "
                     f"{slower} slower (worst {worst:.2f}x: {wr['model']} {wr['scenario']} {wr['dist']})")
    return "; ".join(parts) if parts else "peers: no QuACK timings (not importable, or every call failed)"
