// kernels/sm90/mainloop.cuh: the grouped GEMM's main loop, the part between the scheduler's tiles
// and the epilogue: the producer fills the ring of stages (stage_loads.cuh), the consumers run wgmma
// over it into their accumulators
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

#include "ptx/mbarrier.cuh"
#include "ptx/wgmma.cuh"
#include "sm90/barriers.cuh"
#include "sm90/config.cuh"
#include "sm90/k_tail.cuh"
#include "sm90/shared_storage.cuh"
#include "sm90/tile_scheduler.cuh"

namespace gemmops::kernels::sm90 {

using ::cuda::std::uint32_t;
using ::cuda::std::uint64_t;
using ::cuda::std::uint8_t;

__device__ __forceinline__ int k_blocks_of(const TileCoord& tc) { return (tc.k_end - tc.k_begin + 63) / 64; }

/// The threads that work on one stage clear k in [slices_lo, lo) and [hi, slices_hi) of its A and B
/// tiles (the parts outside the group's [lo, hi) of the 16-wide slices the MMA reads), then make
/// the writes visible to the MMA (async proxy) before any of them issues it. Cooperative: all
/// consumer warpgroups share the stage; ping-pong: the stage's one warpgroup.
template <KernelConfig C>
__device__ __forceinline__ void clear_k_outside(SharedStorage<C>& s, int stage, int slices_lo, int lo, int hi,
                                                int slices_hi, int consumer) {
  constexpr int kThreads = k_clear_threads<C>();
  const int t = static_cast<int>(threadIdx.x) - 128 - (C.pingpong() ? 128 * consumer : 0);
  uint8_t* a = s.a() + stage * C.a_stage_bytes();
  uint8_t* b = s.b() + stage * C.b_stage_bytes();
  zero_k_range<C.a_major == AMajor::k>(a, C.tile_m, slices_lo, lo, t, kThreads);
  zero_k_range<C.a_major == AMajor::k>(a, C.tile_m, hi, slices_hi, t, kThreads);
  zero_k_range<C.b_major == BMajor::k>(b, C.tile_n, slices_lo, lo, t, kThreads);
  zero_k_range<C.b_major == BMajor::k>(b, C.tile_n, hi, slices_hi, t, kThreads);
  ptx::fence_proxy_async_shared();
  ptx::named_barrier_sync(k_clear_barrier<C>(consumer), kThreads);
}

}  // namespace gemmops::kernels::sm90
