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


class PlanLaunch:
    """A C++ plan and what each launch of it needs, read once (the host cost of a call is the
    point): the bytes of workspace and the device ordinal (-1: the host)."""

    __slots__ = ("plan", "workspace", "device")

    def __init__(self, plan, device: int):
        self.plan, self.workspace, self.device = plan, plan.workspace_size, device

    def run(self, a, b, out, offs, row_scale=None):
        """Launches on tensors of the plan's layout (unchecked) on the current stream, the workspace
        from torch's caching allocator: stream-ordered, so freeing it after the launch is safe, and
        inside a CUDA-graph capture it comes from the graph's pool."""
        stream = _raw_stream(self.device) if self.device >= 0 else 0
        ws = torch.empty(self.workspace, dtype=torch.uint8, device=out.device) if self.workspace else None
        args = (a.data_ptr(), b.data_ptr(), out.data_ptr(), 0 if offs is None else offs.data_ptr(), stream,
                0 if ws is None else ws.data_ptr(), self.workspace)
        if row_scale is None:  # (no keyword to parse on grouped_mm's calls)
            self.plan._run_unchecked(*args)
        else:
            self.plan._run_unchecked(*args, row_scale=row_scale.data_ptr())


class _Launch:
    """One layout's plan, and the inputs it wants as contiguous copies."""

    __slots__ = ("launch", "copy_a", "copy_b", "copy_offs")

    def __init__(self, launch: PlanLaunch, copy_a: bool, copy_b: bool, copy_offs: bool):
        self.launch, self.copy_a, self.copy_b, self.copy_offs = launch, copy_a, copy_b, copy_offs

    def __call__(self, a, b, out, offs):
        if self.copy_a:
            a = a.contiguous()
        if self.copy_b:
            b = b.contiguous()
        if self.copy_offs:
            offs = offs.contiguous()
        self.launch.run(a, b, out, offs)


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
            first_error = first_error or no_operator(args)
            continue
        cost = ops[0].estimated_time_us(args) + (_copy_us(a) if copy_a else 0.0) + (_copy_us(b) if copy_b else 0.0)
        if best is None or cost < best[0]:
            best = (cost, args, ops[0], copy_a, copy_b)
    if best is None:
        raise first_error
    _, args, op, copy_a, copy_b = best
    plan = _core.make_plan(args, operator=op)
    return _Launch(PlanLaunch(plan, a.get_device()), copy_a, copy_b, need_offs_copy)


def no_operator(args) -> GroupedMMError:
    reasons = "; ".join(f"{op.name if op else 'target'}: {status.error}" for op, status in _core.get_rejections(args)[:3])
    return GroupedMMError(f"gemmops: no operator serves {args!r}; first reasons: {reasons}")
