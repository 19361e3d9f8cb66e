# python/gemmops/torch/_dispatch.py: how one layout of a grouped_mm form runs: the best operator's
# plan (discovery and compile once), then each call passes only data addresses to C++
# SPDX-License-Identifier: Apache-2.0

import torch

from .. import _gemmops as _core
from ._forms import GroupedMMError

# Bytes a copy moves per microsecond (read + write at ~3 TB/s): what a contiguous copy of an input
# costs when it lets a faster operator serve (e.g. an M-major A that the Hopper kernels refuse in
# the M-grouped form, which the portable kernel serves at a fraction of their speed).
_COPY_BYTES_PER_US = 1.5e6


def _stream_object_handle(device: int) -> int:
    return torch.cuda.current_stream(device).cuda_stream


# The current stream's raw handle without making a Stream object, where torch has the call.
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", _stream_object_handle)


def _arguments(form: str, a, b, out, offs):
    if form == "3d3d":
        return _core.GemmArguments(a, b, out, accumulator_type="float32")
    return _core.GroupedGemmArguments(a, b, out, accumulator_type="float32", offsets=offs,
                                      zero_tail=form in ("2d3d", "3d2d"))


class _Launch:
    """One layout's plan, and the inputs it wants as contiguous copies."""

    __slots__ = ("plan", "copy_a", "copy_b", "copy_offs", "workspace", "device")

    def __init__(self, plan, copy_a: bool, copy_b: bool, copy_offs: bool, device: int):
        self.plan, self.copy_a, self.copy_b, self.copy_offs = plan, copy_a, copy_b, copy_offs
        self.workspace = plan.workspace_size
        self.device = device

    def __call__(self, a, b, out, offs):
        if self.copy_a:
            a = a.contiguous()
        if self.copy_b:
            b = b.contiguous()
        if self.copy_offs:
            offs = offs.contiguous()
        stream = _raw_stream(self.device) if self.device >= 0 else 0
        ws = None
        if self.workspace:
            # torch's caching allocator: stream-ordered, so freeing it after the launch is safe, and
            # inside a CUDA-graph capture it comes from the graph's pool.
            ws = torch.empty(self.workspace, dtype=torch.uint8, device=out.device)
        self.plan._run_unchecked(a.data_ptr(), b.data_ptr(), out.data_ptr(), 0 if offs is None else offs.data_ptr(),
                                 stream, 0 if ws is None else ws.data_ptr(), self.workspace)


def _copy_us(t: torch.Tensor) -> float:
    return 2.0 * t.numel() * t.element_size() / _COPY_BYTES_PER_US


def choose(form: str, a, b, out, offs) -> _Launch:
    """The fastest way to serve this layout: the best operator for it as given, or for contiguous
    copies of the inputs when that operator plus the copies is estimated faster. Rows (3d2d:
    columns) of out past offs[-1] are set to zero."""
    need_offs_copy = offs is not None and not offs.is_contiguous()
    if need_offs_copy:
        offs = offs.contiguous()
    variants = [(False, False)]
    if not a.is_contiguous():
        variants.append((True, False))
    if not b.is_contiguous():
        variants.append((False, True))
    if len(variants) == 3:
        variants.append((True, True))
    best = None
    first_error = None
    for copy_a, copy_b in variants:
        va = a.contiguous() if copy_a else a
        vb = b.contiguous() if copy_b else b
        try:
            args = _arguments(form, va, vb, out, offs)
        except (ValueError, TypeError) as e:
            first_error = first_error or e
            continue
        ops = _core.get_operators(args)
        if not ops:
            first_error = first_error or _no_operator(args)
            continue
        cost = ops[0].estimated_time_us(args) + (_copy_us(a) if copy_a else 0.0) + (_copy_us(b) if copy_b else 0.0)
        if best is None or cost < best[0]:
            best = (cost, args, ops[0], copy_a, copy_b)
    if best is None:
        raise first_error
    _, args, op, copy_a, copy_b = best
    plan = _core.make_plan(args, operator=op)
    return _Launch(plan, copy_a, copy_b, need_offs_copy, a.get_device())


def _no_operator(args) -> GroupedMMError:
    reasons = "; ".join(f"{op.name if op else 'target'}: {status.error}" for op, status in _core.get_rejections(args)[:3])
    return GroupedMMError(f"gemmops: no operator serves {args!r}; first reasons: {reasons}")
