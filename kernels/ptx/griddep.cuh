// kernels/ptx/griddep.cuh: programmatic dependent launch (griddepcontrol): a kernel launched with
// programmatic stream serialization may start before the kernel ahead of it on the stream has ended
// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace gemmops::kernels::ptx {

/// Waits until the grids this one depends on have completed and their memory is visible. Every global
/// read or write of data the stream's earlier kernels touch comes after it. Returns at once in a grid
/// launched without the attribute.
__device__ __forceinline__ void griddepcontrol_wait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }

/// Lets the stream's next kernel (launched with the attribute) start its CTAs as SMs free up; they
/// still wait for this grid's end in griddepcontrol_wait. A no-op without such a kernel.
__device__ __forceinline__ void griddepcontrol_launch_dependents() {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

}  // namespace gemmops::kernels::ptx
