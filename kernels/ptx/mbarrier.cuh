// kernels/ptx/mbarrier.cuh: named mbarrier operations (CCCL cuda::ptx underneath)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/ptx>
#include <cuda/std/cstdint>

namespace gemmops::kernels::ptx {

using ::cuda::std::uint32_t;
using ::cuda::std::uint64_t;

__device__ __forceinline__ void mbarrier_init(uint64_t* bar, uint32_t count) {
  ::cuda::ptx::mbarrier_init(bar, count);
}

/// Makes initialised barriers visible to the async proxy (TMA) and the rest of the cluster.
__device__ __forceinline__ void fence_barrier_init() {
  ::cuda::ptx::fence_mbarrier_init(::cuda::ptx::sem_release, ::cuda::ptx::scope_cluster);
}

/// Arrives once and adds `bytes` to the transaction count the phase waits for (TMA producer).
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  ::cuda::ptx::mbarrier_arrive_expect_tx(::cuda::ptx::sem_release, ::cuda::ptx::scope_cta,
                                         ::cuda::ptx::space_shared, bar, bytes);
}

__device__ __forceinline__ void mbarrier_arrive(uint64_t* bar) { (void)::cuda::ptx::mbarrier_arrive(bar); }

#ifdef GEMMOPS_KERNEL_WATCHDOG_NS
__device__ __forceinline__ uint64_t global_timer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
#endif

/// Spins until the phase with parity `phase` has completed. The debugging build (GEMMOPS_KERNEL_WATCHDOG_NS
/// defined) traps after that many nanoseconds instead, so a deadlock fails the launch rather than
/// hanging it. Only a trap: any call here (printf's included) would serialise the wgmma pipeline (C7510).
__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, uint32_t phase) {
#ifdef GEMMOPS_KERNEL_WATCHDOG_NS
  if (::cuda::ptx::mbarrier_try_wait_parity(bar, phase)) return;
  const uint64_t start = global_timer_ns();
  while (!::cuda::ptx::mbarrier_try_wait_parity(bar, phase)) {
    if (global_timer_ns() - start > GEMMOPS_KERNEL_WATCHDOG_NS) asm volatile("trap;");
  }
#else
  while (!::cuda::ptx::mbarrier_try_wait_parity(bar, phase)) {
  }
#endif
}

}  // namespace gemmops::kernels::ptx
