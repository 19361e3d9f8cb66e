# python/gemmops/__init__.py: the gemmops Python API (the C++ core through _gemmops; no GEMM logic here)
# SPDX-License-Identifier: Apache-2.0
"""Fast GEMM and grouped-GEMM operators for NVIDIA GPUs (Hopper first), with CPU reference operators.

    import gemmops as ops
    args = ops.GroupedGemmArguments(A, B, out, accumulator_type=torch.float32, offsets=offsets)
    op = ops.get_operators(args)[0]
    op.run(args, compiled_artifact=op.compile(args))

``epilogue=ops.EpilogueOps(activation="swiglu", bias=b, row_scale=w)`` on the M-grouped, dense and
batched arguments adds bias, activation (``gemmops.activations``; gated ones pair columns by
``gemmops.gate_layouts``) and row scale before the store.

``gemmops.make_plan(args)`` binds the best operator and its artifact to args' layout: ``plan.run(...)``
then costs about the launch. ``gemmops.torch`` (imported on demand) is a drop-in
``torch.nn.functional.grouped_mm``, and ``gemmops.transformers`` (imported on demand) adds the
``experts_implementation="gemmops"`` of transformers.

Errors raise by code (docs/errors.md): ValueError for arguments that break a rule, UnsupportedError
(a ValueError) when an operator cannot serve them, NoDeviceError, CompileError, DriverError and
OutOfMemoryError (RuntimeErrors) for the rest; TypeError only for what is no tensor or dtype at all.
"""

from ._gemmops import (
    Arguments,
    Artifact,
    CompileError,
    DriverError,
    EpilogueOps,
    GemmArguments,
    GroupedGemmArguments,
    NoDeviceError,
    OperandScales,
    Operator,
    OutOfMemoryError,
    Plan,
    Status,
    TensorSpec,
    UnsupportedError,
    __version__,
    activations,
    all_operators,
    autotune,
    device_or_env_supports,
    device_supports,
    get_operators,
    gate_layouts,
    gather_reduce,
    get_rejections,
    make_plan,
    quantize_fp8,
    register_operator,
    route,
    route_workspace_size,
    router_topk,
    router_topk_backward,
    scale_shape,
    score_grad_chunk,
    score_grad_chunks,
)
from . import fp8, utils

__all__ = [
    "Arguments",
    "Artifact",
    "CompileError",
    "DriverError",
    "EpilogueOps",
    "GemmArguments",
    "GroupedGemmArguments",
    "NoDeviceError",
    "OperandScales",
    "Operator",
    "OutOfMemoryError",
    "Plan",
    "Status",
    "TensorSpec",
    "UnsupportedError",
    "__version__",
    "activations",
    "all_operators",
    "autotune",
    "device_or_env_supports",
    "device_supports",
    "fp8",
    "get_operators",
    "gate_layouts",
    "gather_reduce",
    "get_rejections",
    "make_plan",
    "quantize_fp8",
    "register_operator",
    "route",
    "route_workspace_size",
    "router_topk",
    "router_topk_backward",
    "scale_shape",
    "score_grad_chunk",
    "score_grad_chunks",
    "utils",
]
