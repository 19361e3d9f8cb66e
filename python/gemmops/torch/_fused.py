# python/gemmops/torch/_fused.py: the M-grouped product with a fused epilogue op (activation, gated SwiGLU,
# per-row scale; the training step's pre-activation and gated backward), planned once per layout like
# grouped_mm; None when no operator serves the op there
# SPDX-License-Identifier: Apache-2.0
import atexit
from typing import Dict, Optional, Tuple

import torch

from .. import _gemmops as _core
from . import grouped_mm  # defined before gemmops.torch imports this module
from ._dispatch import PlanLaunch, _raw_stream
from ._env import kernel_defines, switched_on
from ._moe_bias import add_row_bias

_launches: Dict[tuple, Optional[PlanLaunch]] = {}
atexit.register(_launches.clear)  # plans hold C++ objects: gone before the extension is


def _key(a, b, offs, out_shape, activation, gate_layout, row_scale) -> tuple:
    return (a.dtype, a.shape, a.stride(), b.dtype, b.shape, b.stride(), offs.shape, out_shape, a.get_device(),
            activation, gate_layout, row_scale is not None, (a.data_ptr() | b.data_ptr()) & 15)


def _plan(a, b, offs, out, activation, gate_layout, row_scale) -> Optional[PlanLaunch]:
    epilogue = _core.EpilogueOps(activation=activation, gate_layout=gate_layout, row_scale=row_scale)
    try:
        args = _core.GroupedGemmArguments(a, b, out, accumulator_type="float32", offsets=offs, zero_tail=True,
                                          epilogue=epilogue)
    except (ValueError, TypeError):
        return None
    ops = _core.get_operators(args)
    if not ops:
        return None
    return PlanLaunch(_core.make_plan(args, operator=ops[0]), a.get_device())


def grouped_mm_epilogue(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor, activation: str = "none",
                        gate_layout: str = "concatenated",
                        row_scale: Optional[torch.Tensor] = None) -> Optional[torch.Tensor]:
    """out[rows of g] = epilogue(a[rows of g] @ b[g]): a (S, K), b (G, K, N), int32 offs (G,) of group
    ends; the activation (gated: out has N/2 columns) and the fp32 row scale (S,) fused into the
    store; rows past offs[-1] are zeros. No autograd. None when no operator fuses this op here (the
    caller then runs the unfused ops)."""
    n = b.shape[-1] // 2 if activation in ("swiglu", "swiglu_oss") else b.shape[-1]
    out_shape = (a.shape[0], n)
    key = _key(a, b, offs, out_shape, activation, gate_layout, row_scale)
    launch = _launches.get(key, False)
    out = torch.empty(out_shape, dtype=a.dtype, device=a.device)
    if launch is False:
        launch = _launches[key] = _plan(a, b, offs, out, activation, gate_layout, row_scale)
    if launch is None:
        return None
    if out.numel():
        launch.run(a, b, out, offs, row_scale)
    return out


# --- the MoE training step's pieces: epilogue second operands, gathered rows, gathered K (each passed
# the GPU suite on an H100; None where no operator serves the arguments: the caller falls back)
_step_plans: Dict[tuple, Optional[object]] = {}
atexit.register(_step_plans.clear)


def _layout(t: Optional[torch.Tensor]) -> Optional[tuple]:
    return None if t is None else (t.dtype, t.shape, t.stride(), t.data_ptr() & 15)


# GEMMOPS_AUTOTUNE=1: each piece's operator is chosen by timing the ranking's first AUTOTUNE_CANDIDATES
# (and with GEMMOPS_TRIAL_DESIGNS=1 every trial design, which the ranking puts last) on the piece's
# first call (its real arguments: the runs write only its outputs, which the planned run then writes
# again), as SonicMoE's autotuned configurations are; otherwise the ranking's first.
# The choice is kept per layout, as the plan is. (The ranking's machine model has no term for a
# gathered producer: on an H100 the up projection's 2-CTA twin of its pick ran 18% faster.)
AUTOTUNE_CANDIDATES = 6


def _autotuning() -> bool:
    return switched_on("GEMMOPS_AUTOTUNE")


def _splits_k(args, op) -> bool:
    """Whether op's plan for args splits K (its partial sums meet in a workspace)."""
    return _core.make_plan(args, operator=op).workspace_size > 0


def _is_trial(op) -> bool:
    return bool(op.metadata.get("trial", False))


def _chosen_operator(args, ops, device: int):
    """The ranking's first, or with GEMMOPS_AUTOTUNE the fastest of its first few on args (never while
    a CUDA graph is being captured: timing synchronises). Timing may pick another candidate next run,
    so the candidates are those that give the same bits (any design sums K in one order,
    test_autotune.py's determinism test): none where the first splits K, and no plan that splits it."""
    if not _autotuning() or device < 0 or len(ops) < 2 or torch.cuda.is_current_stream_capturing():
        return ops[0]
    candidates = ops[:AUTOTUNE_CANDIDATES]
    if switched_on("GEMMOPS_TRIAL_DESIGNS"):  # trials rank last until a sweep fits them: time them too
        candidates += [op for op in ops[AUTOTUNE_CANDIDATES:] if _is_trial(op)]
    if _splits_k(args, candidates[0]):
        return ops[0]
    candidates = [candidates[0]] + [op for op in candidates[1:] if not _splits_k(args, op)]
    if len(candidates) < 2:
        return ops[0]
    # Round-robin (autotune's GPU timing), 10 runs a candidate: with 5 the autotuned Qwen3-30B-A3B step
    # ran 4.4% slower than the ranking's picks on an H100 (2026-12-07), so noise may have picked.
    timed = _core.autotune(args, candidates, warmup=2, iterations=10, stream=_raw_stream(device))
    fastest = [op for op, _, status in timed if status.ok]
    return fastest[0] if fastest else ops[0]


def _plan_key(key: tuple) -> tuple:
    """A layout's key in _step_plans: with GEMMOPS_AUTOTUNE's state and GEMMOPS_KERNEL_DEFINES, so one
    process can time a step with the ranking's picks beside the same step autotuned (bench_layer
    --autotuned), or with its kernels compiled with a define (bench_layer --ab-defines)."""
    return key + (_autotuning(), kernel_defines())


def _run_planned(key: tuple, args, device: int) -> bool:
    """Runs `args` with the plan of its layout (made on first use); False when no operator serves it."""
    key = _plan_key(key)
    plan = _step_plans.get(key, False)
    if plan is False:
        ops = _core.get_operators(args)
        plan = _step_plans[key] = _core.make_plan(args, operator=_chosen_operator(args, ops, device)) if ops else None
    if plan is None:
        return False
    stream, ws = _stream_and_workspace(plan, device, args.out.device)
    plan.run(args, stream, _ptr(ws), plan.workspace_size)
    return True


def _ptr(t: Optional[torch.Tensor]) -> int:
    return 0 if t is None else t.data_ptr()


def _stream_and_workspace(plan, device: int, on: torch.device):
    """A launch's current stream (device -1: the host's 0) and the plan's workspace from torch's caching
    allocator on `on` (None when it needs none): stream-ordered, so freeing it after the launch is safe."""
    stream = _raw_stream(device) if device >= 0 else 0
    ws = torch.empty(plan.workspace_size, dtype=torch.uint8, device=on) if plan.workspace_size else None
    return stream, ws


def _run_cached(key: tuple, a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor, out: torch.Tensor,
                **addresses) -> Optional[bool]:
    """Runs the plan an earlier call made for this layout (its key) on tensors of that layout by their
    data addresses alone: True (run, or nothing to run), False before the layout's first call (the
    caller checks its arguments and makes the plan), None where no operator serves it. No arguments
    object is built, whose checks of every operand cost tens of microseconds of host time a call
    (the step's host work is what keeps its kernels fed); the workspace on out's device."""
    plan = _step_plans.get(_plan_key(key), False)
    if plan is None or plan is False:
        return None if plan is None else False
    if out.numel():
        stream, ws = _stream_and_workspace(plan, a.get_device(), out.device)
        plan._run_unchecked(a.data_ptr(), b.data_ptr(), out.data_ptr(), offs.data_ptr(), stream, _ptr(ws),
                            plan.workspace_size, **addresses)
    return True


def step_grouped_mm(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor,
                    bias: Optional[torch.Tensor] = None) -> torch.Tensor:
    """The step's plain pieces (the down projection, the up projection's data gradient): out[rows of g]
    = a[rows of g] @ b[g] (+ bias[g], (G, N), fused into the store), rows past offs[-1] zeros.
    grouped_mm's, or with GEMMOPS_AUTOTUNE (or a bias) a planned operator: with GEMMOPS_AUTOTUNE the
    fastest of the ranking's first few, as the fused pieces (on an H100 the ranking's pick of these
    two left 84 us of a Qwen3-30B-A3B step). No autograd."""
    def unfused():
        out = grouped_mm(a, b, offs)
        return out if bias is None else add_row_bias(out, bias, offs)

    if bias is None and (not _autotuning() or not a.is_cuda):
        return grouped_mm(a, b, offs)
    out = torch.empty((a.shape[0], b.shape[-1]), dtype=a.dtype, device=a.device)
    bias = bias.to(a.dtype) if bias is not None else None
    key = ("mm", _layout(a), _layout(b), _layout(offs), _layout(out), _layout(bias), a.get_device())
    ran = _run_cached(key, a, b, offs, out, bias=_ptr(bias))
    if ran is not False:
        return out if ran else unfused()
    try:
        epilogue = _core.EpilogueOps(bias=bias) if bias is not None else None
        args = _core.GroupedGemmArguments(a, b, out, accumulator_type="float32", offsets=offs, zero_tail=True,
                                          **({"epilogue": epilogue} if epilogue is not None else {}))
    except (ValueError, TypeError):
        return unfused()
    if out.numel() and not _run_planned(key, args, a.get_device()):
        return unfused()
    return out


def grouped_mm_with_pre_activation(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor, activation: str,
                                   gate_layout: str = "concatenated", bias: Optional[torch.Tensor] = None,
                                   alpha: float = 1.702, limit: float = 7.0,
                                   a_row_index: Optional[torch.Tensor] = None, keep_pre_activation: bool = True
                                   ) -> Optional[Tuple[torch.Tensor, Optional[torch.Tensor]]]:
    """The MoE up projection keeping what its backward needs: h = a[rows of g] @ b[g] (+ bias[g]) and
    out = activation(h), one kernel: returns (out, h); h (S, N) and out (S, N/2 gated, else N) in a's
    dtype, rows past offs[-1] zeros. With a_row_index (int32 (S,)) row r of the product reads
    a[a_row_index[r]] (the tokens' rows, never copied). keep_pre_activation=False: h is neither
    written nor returned (None), the forward without gradients. None when no operator serves it here.
    No autograd."""
    n = b.shape[-1]
    out_n = n // 2 if activation in ("swiglu", "swiglu_oss") else n
    rows = a.shape[0] if a_row_index is None else a_row_index.shape[0]
    out = torch.empty((rows, out_n), dtype=a.dtype, device=a.device)
    h = torch.empty((rows, n), dtype=a.dtype, device=a.device) if keep_pre_activation else None
    key = ("pre", _layout(a), _layout(b), _layout(offs), _layout(bias), _layout(out), _layout(h), a.get_device(),
           activation, gate_layout, alpha, limit, _layout(a_row_index))
    ran = _run_cached(key, a, b, offs, out, bias=_ptr(bias), a_row_index=_ptr(a_row_index), pre_activation=_ptr(h))
    if ran is not False:
        return (out, h) if ran else None
    try:
        epilogue = _core.EpilogueOps(activation=activation, gate_layout=gate_layout, alpha=alpha, limit=limit,
                                     bias=bias, pre_activation=h)
        args = _core.GroupedGemmArguments(a, b, out, accumulator_type="float32", offsets=offs, zero_tail=True,
                                          epilogue=epilogue, a_row_index=a_row_index)
    except (ValueError, TypeError):
        return None
    if out.numel() and not _run_planned(key, args, a.get_device()):
        return None
    return out, h


def grouped_mm_dgated(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor, h: torch.Tensor,
                      scores: Optional[torch.Tensor] = None, activation: str = "swiglu",
                      gate_layout: str = "concatenated", alpha: float = 1.702, limit: float = 7.0,
                      a_row_index: Optional[torch.Tensor] = None
                      ) -> Optional[Tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """The MoE down projection's dgrad with the activation's backward fused into its store:
    dA = a[rows of g] @ b[g] (a = dout rows (S, H), b = W2 transposed (G, H, I)), and from the saved
    pre-activation h (S, 2I gated, else (S, I)) and the routing scores s (S,) fp32 (1 without):
    returns (dh, s * act(h), ds): dh (h's shape; gated: in gate_layout) = s * dA * d act/d (gate | up), the
    scaled activation (S, I) for dW2, and ds[r] = sum_c dA[r, c] act(h)[r, c] (fp32, (S,)), the sum
    of the kernel's per-64-column partials in column order. Rows past offs[-1] are zeros. With
    a_row_index (int32 (S,)) row r of dA reads a[a_row_index[r]] (dout's token rows, never copied).
    None when no operator serves it here. No autograd."""
    rows, i = (a.shape[0] if a_row_index is None else a_row_index.shape[0]), b.shape[-1]
    gated = activation in ("swiglu", "swiglu_oss")
    dh = torch.empty((rows, 2 * i if gated else i), dtype=a.dtype, device=a.device)
    scaled = torch.empty((rows, i), dtype=a.dtype, device=a.device)
    partials = torch.empty((rows, _core.score_grad_chunks(i)), dtype=torch.float32, device=a.device)
    key = ("dgated", _layout(a), _layout(b), _layout(offs), _layout(h), _layout(scores), _layout(dh),
           _layout(scaled), _layout(partials), a.get_device(), activation, gate_layout, alpha, limit,
           _layout(a_row_index))
    ran = _run_cached(key, a, b, offs, dh, row_scale=_ptr(scores), a_row_index=_ptr(a_row_index),
                      grad_pre_activation=h.data_ptr(), scaled_activation=scaled.data_ptr(),
                      score_grad_partials=partials.data_ptr())
    if ran is not False:
        return (dh, scaled, partials.sum(dim=1)) if ran else None
    try:
        epilogue = _core.EpilogueOps(activation=activation, gate_layout=gate_layout, alpha=alpha, limit=limit,
                                     row_scale=scores, grad_pre_activation=h, scaled_activation=scaled,
                                     score_grad_partials=partials)
        args = _core.GroupedGemmArguments(a, b, dh, accumulator_type="float32", offsets=offs, zero_tail=True,
                                          epilogue=epilogue, a_row_index=a_row_index)
    except (ValueError, TypeError):
        return None
    if dh.numel() and not _run_planned(key, args, a.get_device()):
        return None
    return dh, scaled, partials.sum(dim=1)


def grouped_mm_k_gathered(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor,
                          a_k_index: Optional[torch.Tensor] = None,
                          b_k_index: Optional[torch.Tensor] = None, out_m_major: bool = False) -> Optional[torch.Tensor]:
    """The K-grouped product with operands read through an index along K (the MoE weight gradients):
    out[g] = A'[:, ks of g] @ B'[ks of g, :], where A'[:, k] = a[:, a_k_index[k]] (a (M, Rows), e.g.
    x.t()) and B'[k, :] = b[b_k_index[k], :] (b (Rows, N)), each as given where its index is None;
    ks past offs[-1] are not read, a group without ks gets zeros. (G, M, N) in a's dtype, or None
    when no operator serves it here. No autograd. out_m_major: the result is the transposed view of
    a contiguous (G, N, M) (each group's result stored transposed)."""
    G, M, N = offs.shape[0], a.shape[0], b.shape[1]
    # (out is a fresh allocation: its layout is its shape and out_m_major; a layout no operator
    # serves is known from the key before any allocation or argument check.)
    key = ("k_gathered", _layout(a), _layout(b), _layout(offs), (a.dtype, G, M, N, out_m_major),
           _layout(a_k_index), _layout(b_k_index), a.get_device())
    if _step_plans.get(_plan_key(key), False) is None:
        return None
    if out_m_major:
        out = torch.empty((G, N, M), dtype=a.dtype, device=a.device).transpose(-2, -1)
    else:
        out = torch.empty((G, M, N), dtype=a.dtype, device=a.device)
    if _run_cached(key, a, b, offs, out, a_k_index=_ptr(a_k_index), b_k_index=_ptr(b_k_index)):
        return out
    try:
        args = _core.GroupedGemmArguments(a, b, out, accumulator_type="float32", offsets=offs,
                                          a_k_index=a_k_index, b_k_index=b_k_index)
    except (ValueError, TypeError):
        return None
    if out.numel() and not _run_planned(key, args, a.get_device()):
        return None
    return out
