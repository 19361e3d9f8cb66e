// kernels/sm90/mainloop.cuh: the grouped GEMM's main loop, the part between the scheduler's tiles
// and the epilogue: the producer fills the ring of stages (stage_loads.cuh), the consumers run wgmma
// over it into their accumulators (Mainloop<C>)
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
using Tiles = TileIterator<C.unit_m(), C.unit_n(), C.cluster_size(), C.group_axis, kKBlockAlign<C>, C.split_k,
                           kFastDivide, C.pairs_last_unit() ? C.tile_m : 0>;

/// The first row of this CTA's tile in the unit `tc`: a 2-CTA cluster along M stacks its CTAs'
/// tiles, but for a paired unit (TileCoord::paired), whose CTAs share the rows.
template <KernelConfig C>
__device__ __forceinline__ int cta_row_offset(const TileCoord& tc, uint32_t rank) {
  if constexpr (C.pairs_last_unit()) {
    if (tc.paired) return 0;
  }
  return C.cta_row_offset(static_cast<int>(rank));
}

/// The main loop of 16-bit operands (bf16, fp16): TMA (or the producer warpgroup's copies, for a
/// gathered operand) fills a ring of 128-byte-swizzled stages, and k16 wgmmas read them. The
/// kernel walks the tiles and calls, per tile,
///   producer:  load_tile (the tile's k-blocks into the ring),
///   consumers: mma_tile (the MMAs of the tile's k-blocks), drain (the last ones done) and
///              release (a stage back to the producer),
/// and keeps the rest (the ping-pong turns, the bias, split-K, the store). A main loop of other
/// operands (fp8: k32 MMAs, scales promoted per 128 K) would be a struct with these functions.
/// Every loop's body is a function of its own (load_k_block, mma_k_block, mma_stage): NVVM
/// simplifies a function before it inlines it, and only so nested do these compile to the code
/// they compiled to when written out in the kernel's produce() and consume() (docs/design.md).
template <KernelConfig C>
struct Mainloop {
  /// A consumer warpgroup's accumulators: (64, TILE_N) fp32 fragments, one per 64-row M atom.
  using Accumulators = float[C.m_atoms()][C.tile_n / 2];

  /// A's rows gathered through an index (M-grouped, gather_a.cuh). (A function, not a static data
  /// member: NVRTC emits those into the PTX.)
  __device__ static constexpr bool gathers_rows() { return C.gather_a && C.group_axis == GroupAxis::m; }
  /// Operands gathered along K (K-grouped, gather_k.cuh).
  __device__ static constexpr bool gathers_along_k() { return C.gathers() && C.group_axis == GroupAxis::k; }

  /// The tile's k-blocks (the scheduler's 64-wide blocks).
  __device__ __forceinline__ static int k_blocks(const TileCoord& tc) { return k_blocks_of(tc); }
  /// What the store reads once the tile is done: the accumulators themselves.
  __device__ __forceinline__ static Accumulators& result(Accumulators& acc) { return acc; }
  /// Nothing to set up before a tile (the fp8 main loop clears its promoted sum and finds its scales).
  __device__ __forceinline__ static void start_tile(Accumulators&, const GroupedGemmParams&, const TileCoord&, int) {}

  // ---------------------------------------------------------------- producer
  /// Loads the tile's k-blocks into the ring from `ring` on (advanced past them), each stage once
  /// its consumers have released it. One elected thread, or with a gathered operand the producer
  /// warpgroup's `thread`. Of the scheduler's params (`sched`) the loads read the extents: the
  /// gathered copies stop at the rows of A, N and K; the gated B's up half starts at N / 2.
  __device__ __forceinline__ static void load_tile(const MainloopParams& m, const SchedulerParams& sched,
                                                   SharedStorage<C>& s, const TileCoord& tc, uint32_t rank,
                                                   [[maybe_unused]] int thread, PipelineCursor<C.stages>& ring) {
    const int a_row0 = tc.a_row0 + cta_row_offset<C>(tc, rank);
    const int k_blocks = k_blocks_of(tc);
    [[maybe_unused]] GatheredRows<C> gathered;  // the tile's row indices, read once
    if constexpr (gathers_rows()) {
      if (k_blocks > 0) gathered.load(m, a_row0, tc.row_end, thread);
    }
    // Gathered along K: each k-block's k-rows, read while the k-block before waits and copies.
    [[maybe_unused]] GatheredKOperands<C> next;
    if constexpr (gathers_along_k()) {
      if (k_blocks > 0) next.load(m.a_row_index, m.b_row_index, tc.k_begin, tc.k_first, tc.k_end, thread);
    }
    for (int kb = 0; kb < k_blocks; ++kb) {
      [[maybe_unused]] const GatheredKOperands<C> rows = next;
      if constexpr (gathers_along_k()) {
        if (kb + 1 < k_blocks)
          next.load(m.a_row_index, m.b_row_index, tc.k_begin + (kb + 1) * C.tile_k, tc.k_first, tc.k_end, thread);
      }
      load_k_block(m, sched, s, tc, a_row0, kb, ring, rank, thread, gathered, rows);
    }
  }

  /// The tile's `kb`-th k-block into the stage at `ring`, once the stage is free; `ring` steps on.
  __device__ __forceinline__ static void load_k_block(const MainloopParams& m, const SchedulerParams& sched,
                                                      SharedStorage<C>& s, const TileCoord& tc, int a_row0, int kb,
                                                      PipelineCursor<C.stages>& ring, uint32_t rank,
                                                      [[maybe_unused]] int thread,
                                                      [[maybe_unused]] const GatheredRows<C>& gathered,
                                                      [[maybe_unused]] const GatheredKOperands<C>& rows) {
    // The cursor's copies and its step written out here, beside the wait's `phase ^ 1`: through
    // ring.advance() the step compiled to a select and an xor where it was one select.
    int stage = ring.stage;
    uint32_t phase = ring.phase;
    if constexpr (gathers_along_k()) {
      produce_gathered_k<C>(m, sched, s, tc, a_row0, tc.k_begin + kb * C.tile_k, stage, phase, rank, thread, rows);
    } else {
      // B's group coordinate: K-grouped B is one (K, N) matrix. (The zero tail's tiles, past the
      // last group, have no k-blocks: nothing is loaded for them.)
      const int b_group = C.group_axis == GroupAxis::m ? tc.group : 0;
      ptx::mbarrier_wait(s.empty(stage), phase ^ 1);
      uint64_t* bar = s.full(stage);
      const int k0 = tc.k_begin + kb * C.tile_k;
      uint8_t* a_dst = s.a() + stage * C.a_stage_bytes();
      uint8_t* b_dst = s.b() + stage * C.b_stage_bytes();
      if constexpr (gathers_rows()) {
        // B's bytes complete the transaction count; A's copies arrive as 128 of the barrier's count.
        if (thread == 0) {
          ptx::mbarrier_arrive_expect_tx(bar, C.b_stage_bytes());
          load_stage_b(m, sched.n, b_dst, k0, tc, b_group, bar, rank);
        }
        gathered.copy(m, a_dst, k0, sched.k, thread, bar);
      } else {
        ptx::mbarrier_arrive_expect_tx(bar, C.stage_bytes());
        // (Written out, not load_a: through it the 24-register producer of the 128x192 ping-pong
        // spilled 4 bytes with A M-major.)
        if constexpr (C.cluster_n > 1) {
          load_a_multicast<C>(m, a_dst, k0, a_row0, bar, rank);
        } else if constexpr (C.a_major == AMajor::k) {
          ptx::tma_load_2d(a_dst, &m.map_a, k0, a_row0, bar);
        } else {
#pragma unroll
          for (int j = 0; j < C.tile_m / 64; ++j)  // one 64-row M atom per box
            ptx::tma_load_2d(a_dst + j * 64 * C.k_row_bytes(), &m.map_a, a_row0 + 64 * j, k0, bar);
        }
        load_stage_b(m, sched.n, b_dst, k0, tc, b_group, bar, rank);
      }
    }
    if (++stage == C.stages) {
      stage = 0;
      phase ^= 1;
    }
    ring.stage = stage;
    ring.phase = phase;
  }

  /// A stage's B tile: shared by the cluster, or in a paired unit this CTA's own column tile.
  __device__ __forceinline__ static void load_stage_b(const MainloopParams& m, int n, uint8_t* b_dst, int k0,
                                                      const TileCoord& tc, int b_group, uint64_t* bar, uint32_t rank) {
    if constexpr (C.pairs_last_unit()) {
      if (tc.paired) {
        load_b_own<C>(m, n, b_dst, k0, tc.col0, b_group, bar);
        return;
      }
    }
    load_b<C>(m, n, b_dst, k0, tc.col0, b_group, bar, rank);
  }

  // ---------------------------------------------------------------- consumers
  /// The MMAs of the tile's `k_blocks` k-blocks into `acc`, stage by stage from `cur` on (advanced
  /// past them), this warpgroup's A atoms from `a_atom0` on. A warpgroup whose rows all lie past
  /// the group's end (`live_atoms` 0) issues none: it only waits for the stages and releases them.
  /// Each stage is released once the next one's MMAs are issued; the last one's stay in flight
  /// (drain). With a bias the accumulators start from it, and the first MMA accumulates.
  __device__ __forceinline__ static void mma_tile(Accumulators& acc, SharedStorage<C>& s, const TileCoord& tc,
                                                  int k_blocks, PipelineCursor<C.stages>& cur, int a_atom0,
                                                  int live_atoms, int consumer, bool release_lane) {
    for (int kb = 0; kb < k_blocks; ++kb) {
      mma_k_block(acc, s, tc, kb, cur, a_atom0, live_atoms, consumer, release_lane);
      cur.advance();
    }
  }

  /// Waits for the warpgroup's MMAs in flight: `acc` then holds the tile. (The caller releases the
  /// tile's last stage, the one before `cur`: inside this function the kernels compiled otherwise.)
  __device__ __forceinline__ static void drain(Accumulators& acc) {
    ptx::wgmma_wait<0>();
#pragma unroll
    for (int a = 0; a < C.m_atoms(); ++a) ptx::fence_registers(acc[a]);
  }

  /// Hands `stage` back to the producer: it is free again once the consumers of every CTA that
  /// receives its A or B multicast are done with it (one arrival per consumer warp and CTA).
  __device__ __forceinline__ static void release(SharedStorage<C>& s, int stage) {
    if constexpr (C.cluster_size() == 1) {
      ptx::mbarrier_arrive(s.empty(stage));
    } else {
#pragma unroll
      for (int c = 0; c < C.cluster_size(); ++c) ptx::mbarrier_arrive_cluster(ptx::map_to_rank(s.empty(stage), c));
    }
  }

  /// The tile's `kb`-th k-block, in the stage at `cur`: waits for it, clears its K edges
  /// (K-grouped), issues its MMAs and releases the stage before it.
  __device__ __forceinline__ static void mma_k_block(Accumulators& acc, SharedStorage<C>& s, const TileCoord& tc,
                                                     int kb, const PipelineCursor<C.stages>& cur, int a_atom0,
                                                     int live_atoms, int consumer, bool release_lane) {
    const int stage = cur.stage;
    ptx::mbarrier_wait(s.full(stage), cur.phase);
    // A gathered A was written by cp.async, in the generic proxy, and wgmma reads shared memory
    // through the async proxy. The writers cannot fence: their copies land after they arrive
    // (.noinc arrives on completion, which they never wait for). So each reader, having acquired
    // the copies through the full barrier, orders them before its own wgmma (PTX memory model:
    // a proxy fence orders the executing thread's view across proxies).
    if constexpr (C.gathers()) ptx::fence_proxy_async_shared();
    constexpr int kSlices = C.tile_k / 16;
    int slice_lo = 0, slice_hi = kSlices;  // the 16-wide k slices of the stage the MMA reads
    if constexpr (C.group_axis == GroupAxis::k) {
      const int k0 = tc.k_begin + kb * C.tile_k;
      const int lo = tc.k_first > k0 ? tc.k_first - k0 : 0;
      const int hi = tc.k_end - k0 < C.tile_k ? tc.k_end - k0 : C.tile_k;
      slice_lo = lo / 16;
      slice_hi = (hi + 15) / 16;
      // (lo & ~15 is 16 * slice_lo, lo being >= 0; so written, the K-major clearing compiles as it
      // did in consume(), where 16 * slice_lo became a shift of slice_lo here.)
      if (lo > (lo & ~15) || hi < 16 * slice_hi)
        clear_k_outside<C>(s, stage, lo & ~15, lo, hi, 16 * slice_hi, consumer);
    }
    mma_stage(acc, s, stage, a_atom0, live_atoms, slice_lo, slice_hi, kb);
    ptx::wgmma_wait<1>();  // the previous stage's MMAs are done: hand it back to the producer
    // The stage before this one (computed, not carried: a register the 192-wide kernels need).
    if (kb > 0 && release_lane) release(s, stage == 0 ? C.stages - 1 : stage - 1);
  }

  /// The MMAs of the k slices [slice_lo, slice_hi) of `stage` into `acc` (the tile's `kb`-th
  /// k-block), none in a warpgroup without live atoms. The whole stage is one group of MMAs; a
  /// K-grouped group's partial first or last stage is a group per slice, so that no branch sits
  /// between the wgmmas of one group.
  __device__ __forceinline__ static void mma_stage(Accumulators& acc, SharedStorage<C>& s, int stage, int a_atom0,
                                                   int live_atoms, int slice_lo, int slice_hi, int kb) {
    constexpr int kTransB = C.b_major == BMajor::n ? 1 : 0;
    constexpr int kAtoms = C.m_atoms();
    constexpr int kAtomBytes = 64 * C.k_row_bytes();  // 64 rows of A: one contiguous atom, either major
    constexpr int kSlices = C.tile_k / 16;
    constexpr int kFirstAccumulates = C.op.bias ? 1 : 0;  // a bias is where the accumulators start
    const uint8_t* a_tile = s.a() + stage * C.a_stage_bytes() + a_atom0 * kAtomBytes;
    const uint8_t* b_tile = s.b() + stage * C.b_stage_bytes();
    const uint64_t desc_b = kTransB ? ptx::make_smem_desc_sw128(b_tile, 64 * C.k_row_bytes(), 1024)
                                    : ptx::make_smem_desc_sw128(b_tile, 16, 1024);
    if (live_atoms > 0) {
      if (slice_hi - slice_lo == kSlices) {
#pragma unroll
        for (int a = 0; a < kAtoms; ++a) ptx::fence_registers(acc[a]);
        ptx::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < kSlices; ++kk)
          mma_slice(acc, a_tile, desc_b, kk, (kFirstAccumulates || kb > 0 || kk > 0) ? 1 : 0);
        ptx::wgmma_commit();
#pragma unroll
        for (int a = 0; a < kAtoms; ++a) ptx::fence_registers(acc[a]);
      } else {
        for (int kk = slice_lo; kk < slice_hi; ++kk) {
#pragma unroll
          for (int a = 0; a < kAtoms; ++a) ptx::fence_registers(acc[a]);
          ptx::wgmma_fence();
          mma_slice(acc, a_tile, desc_b, kk, (kFirstAccumulates || kb > 0 || kk > slice_lo) ? 1 : 0);
          ptx::wgmma_commit();
#pragma unroll
          for (int a = 0; a < kAtoms; ++a) ptx::fence_registers(acc[a]);
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
};

}  // namespace gemmops::kernels::sm90
