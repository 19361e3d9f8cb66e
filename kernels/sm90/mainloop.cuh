// kernels/sm90/mainloop.cuh: the grouped GEMM's main loop, the part between the scheduler's tiles
// and the epilogue: the producer fills the ring of stages (stage_loads.cuh), the consumers run wgmma
// over it into their accumulators
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

#include "ptx/cluster.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/wgmma.cuh"
#include "sm90/barriers.cuh"
#include "sm90/config.cuh"
#include "sm90/k_tail.cuh"
#include "sm90/mma.cuh"
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

/// The main loop of 16-bit operands (bf16, fp16): k16 wgmmas on 128-byte-swizzled stages. Its
/// pieces are static functions on the shared storage, inlined where the kernel's loops call them.
template <KernelConfig C>
struct Mainloop {
  /// A consumer warpgroup's accumulators: (64, TILE_N) fp32 fragments, one per 64-row M atom.
  using Accumulators = float[C.m_atoms()][C.tile_n / 2];

  /// One 16-wide k slice of every atom of the stage: the MMAs into `acc` of the A atoms from
  /// `a_tile` on and the B tile that `desc_b` describes. Every atom, live or not: a branch between
  /// wgmmas makes ptxas serialize them (C7520), which costs far more than the MMA of a dead atom
  /// the epilogue never stores.
  __device__ __forceinline__ static void mma_slice(Accumulators& acc, const uint8_t* a_tile, uint64_t desc_b, int kk,
                                                   int accumulate) {
    constexpr int kTransA = C.a_major == AMajor::m ? 1 : 0;
    constexpr int kTransB = C.b_major == BMajor::n ? 1 : 0;
    constexpr int kAtomBytes = 64 * C.k_row_bytes();  // 64 rows of A: one contiguous atom, either major
    // K-major: 16 elements along the swizzled row; MN-major: 16 k-rows of 128 bytes.
    constexpr uint32_t kSliceBytes = 16 * elem_bytes(C.ab);
    const uint32_t a_step = kTransA ? kk * 16 * 128 : kk * kSliceBytes;
    const uint32_t b_step = kTransB ? kk * 16 * 128 : kk * kSliceBytes;
#pragma unroll
    for (int a = 0; a < C.m_atoms(); ++a) {
      const uint8_t* atom = a_tile + a * kAtomBytes;
      const uint64_t desc_a = kTransA ? ptx::make_smem_desc_sw128(atom, 64 * C.k_row_bytes(), 1024)
                                      : ptx::make_smem_desc_sw128(atom, 16, 1024);
      mma_k16<C.tile_n, C.ab, kTransA, kTransB>(acc[a], ptx::desc_advance(desc_a, a_step),
                                                ptx::desc_advance(desc_b, b_step), accumulate);
    }
  }

  /// Hands `stage` back to the producer: it is free again once the consumers of every CTA that
  /// receives its B multicast are done with it (one arrival per consumer warp and CTA).
  __device__ __forceinline__ static void release(SharedStorage<C>& s, int stage) {
    if constexpr (C.cluster_m == 1) {
      ptx::mbarrier_arrive(s.empty(stage));
    } else {
#pragma unroll
      for (int c = 0; c < C.cluster_m; ++c) ptx::mbarrier_arrive_cluster(ptx::map_to_rank(s.empty(stage), c));
    }
  }
};

}  // namespace gemmops::kernels::sm90
