// kernels/ptx/global_flag.cuh: GPU-scope counters in global memory that publish data between CTAs
// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace gemmops::kernels::ptx {

/// Adds `v` to `*flag` after every write this thread has seen (its own, and its CTA's ones ordered
/// before it by a barrier) is visible GPU-wide: the release side of a flag.
__device__ __forceinline__ void flag_add_release(int* flag, int v) {
  asm volatile("fence.acq_rel.gpu;\nred.relaxed.gpu.global.add.s32 [%0], %1;\n" ::"l"(flag), "r"(v) : "memory");
}

/// Reads `*flag`; the writes released before the value read are visible after it (acquire).
__device__ __forceinline__ int flag_load_acquire(const int* flag) {
  int v;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(v) : "l"(flag) : "memory");
  return v;
}

}  // namespace gemmops::kernels::ptx
