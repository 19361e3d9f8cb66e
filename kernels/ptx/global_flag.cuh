// kernels/ptx/global_flag.cuh: GPU-scope counters in global memory that publish data between CTAs
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "ptx/mbarrier.cuh"

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

/// Spins (sleeping between reads) until `*flag` reaches `target`. The debugging build with the barrier
/// watchdog (mbarrier.cuh) traps after as long as a barrier wait may spin, so a split-K unit whose
/// partners never come fails its launch instead of hanging it.
__device__ __forceinline__ void flag_wait_at_least(const int* flag, int target) {
#ifdef GEMMOPS_KERNEL_WATCHDOG_NS
  const uint64_t start = global_timer_ns();
  while (flag_load_acquire(flag) < target) {
    if (global_timer_ns() - start > GEMMOPS_KERNEL_WATCHDOG_NS) asm volatile("trap;");
    __nanosleep(64);
  }
#else
  while (flag_load_acquire(flag) < target) __nanosleep(64);
#endif
}

}  // namespace gemmops::kernels::ptx
