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
#include "sm90/gather_a.cuh"
#include "sm90/k_tail.cuh"
#include "sm90/mma.cuh"
#include "sm90/params.cuh"
#include "sm90/pipeline.cuh"
#include "sm90/shared_storage.cuh"
#include "sm90/stage_loads.cuh"
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

// The scheduler's tiles, their k-blocks aligned as the loads need (kKBlockAlign), walked by the
// producer and the consumers alike; kFastDivide: multiply-shift divisions (grouped_gemm.cuh).
template <KernelConfig C, bool kFastDivide = false>
using Tiles = TileIterator<C.unit_m(), C.tile_n, C.cluster_m, C.group_axis, kKBlockAlign<C>, C.split_k, kFastDivide>;

/// The main loop of 16-bit operands (bf16, fp16): the producer fills the ring with the tiles'
/// k-blocks (produce), the consumer warpgroups run k16 wgmmas over them into their accumulators
/// (mma_slice) and hand the stages back (release). Static functions on the shared storage, inlined
/// where the kernel calls them. A main loop of other operands (fp8: k32 MMAs, block scales) is a
/// struct like it.
template <KernelConfig C>
struct Mainloop {
  /// A consumer warpgroup's accumulators: (64, TILE_N) fp32 fragments, one per 64-row M atom.
  using Accumulators = float[C.m_atoms()][C.tile_n / 2];

  /// Producer: walks the scheduler's tiles (`sched`, `k_splits`) as the consumers do and loads
  /// each one's k-blocks into the ring, each stage once its consumers have released it. One
  /// elected thread, or with a gathered operand the producer warpgroup's `thread`. Of the
  /// scheduler's params the loads read the extents: the gathered copies stop at the rows of A, N
  /// and K, the gated B's up half starts at N / 2. (The tile loop is here, not in the kernel: as a
  /// function per tile the loads compiled to other instructions.)
  __device__ __forceinline__ static void produce(const MainloopParams& m, const SchedulerParams& sched, int k_splits,
                                                 SharedStorage<C>& s, uint32_t rank, [[maybe_unused]] int thread) {
    int stage = 0;
    uint32_t phase = 0;
    for (Tiles<C> it(sched, k_splits, s.table()); it.valid(); it.advance()) {
      const TileCoord tc = it.current();
      const int a_row0 = tc.a_row0 + static_cast<int>(rank) * C.tile_m;
      // B's group coordinate: K-grouped B is one (K, N) matrix. (The zero tail's tiles, past the
      // last group, have no k-blocks: nothing is loaded for them.)
      const int b_group = C.group_axis == GroupAxis::m ? tc.group : 0;
      const int k_blocks = k_blocks_of(tc);
      constexpr bool kGatherRows = C.gather_a && C.group_axis == GroupAxis::m;
      [[maybe_unused]] GatheredRows<C> gathered;
      if constexpr (kGatherRows) {
        if (k_blocks > 0) gathered.load(m, a_row0, tc.row_end, thread);
      }
      for (int kb = 0; kb < k_blocks; ++kb) {
        if constexpr (C.gathers() && C.group_axis == GroupAxis::k) {
          produce_gathered_k<C>(m, sched, s, tc, a_row0, tc.k_begin + kb * C.tile_k, stage, phase, rank,
                                thread);
          if (++stage == C.stages) {
            stage = 0;
            phase ^= 1;
          }
          continue;
        }
        ptx::mbarrier_wait(s.empty(stage), phase ^ 1);
        uint64_t* bar = s.full(stage);
        const int k0 = tc.k_begin + kb * C.tile_k;
        uint8_t* a_dst = s.a() + stage * C.a_stage_bytes();
        uint8_t* b_dst = s.b() + stage * C.b_stage_bytes();
        if constexpr (kGatherRows) {
          // B's bytes complete the transaction count; A's copies arrive as 128 of the barrier's count.
          if (thread == 0) {
            ptx::mbarrier_arrive_expect_tx(bar, C.b_stage_bytes());
            load_b<C>(m, sched.n, b_dst, k0, tc.col0, b_group, bar, rank);
          }
          gathered.copy(m, a_dst, k0, sched.k, thread, bar);
        } else {
          ptx::mbarrier_arrive_expect_tx(bar, C.stage_bytes());
          // (Written out, not load_a: through it the 24-register producer of the 128x192 ping-pong
          // spilled 4 bytes with A M-major.)
          if constexpr (C.a_major == AMajor::k) {
            ptx::tma_load_2d(a_dst, &m.map_a, k0, a_row0, bar);
          } else {
#pragma unroll
            for (int j = 0; j < C.tile_m / 64; ++j)  // one 64-row M atom per box
              ptx::tma_load_2d(a_dst + j * 64 * C.k_row_bytes(), &m.map_a, a_row0 + 64 * j, k0, bar);
          }
          load_b<C>(m, sched.n, b_dst, k0, tc.col0, b_group, bar, rank);
        }
        if (++stage == C.stages) {
          stage = 0;
          phase ^= 1;
        }
      }
    }
  }

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
