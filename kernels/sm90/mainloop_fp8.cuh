// kernels/sm90/mainloop_fp8.cuh: the main loop of e4m3 operands with block scales (DeepGEMM's
// recipe): k32 wgmmas per 128-K block into one fp32 register set, then that block's sum scaled by
// a_scale(row, kb) * b_scale(kb, n block) and added into a second set, the one the store reads
// (128-wide tiles: two block sets, one promoted under the other's MMAs; 192-wide: one); or
// with a scale per row of A and per column of B (KernelConfig::fp8_rowwise), each block's sum added
// unscaled and the sum scaled once after the tile's last block
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

#include "ptx/cluster.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"
#include "ptx/wgmma_mma.cuh"
#include "sm90/config.cuh"
#include "sm90/mainloop.cuh"
#include "sm90/params.cuh"
#include "sm90/pipeline.cuh"
#include "sm90/shared_storage.cuh"
#include "sm90/stage_loads.cuh"
#include "sm90/tile_scheduler.cuh"

namespace gemmops::kernels::sm90 {

// (Functions, not constants: NVRTC emits a used static data member or variable template into the
// PTX; and at namespace scope, so that Fp8Mainloop's members can be sized by them.)
/// Block sets beside the sum: 2 x 64 + 64 fit the consumers' registers, 2 x 96 + 96 would not.
template <KernelConfig C>
__device__ constexpr int fp8_block_sets() { return C.tile_n == 128 ? 2 : 1; }
/// B scale blocks a tile's columns read: a 192-wide tile starts at 0 or 64 within a 128-wide block.
template <KernelConfig C>
__device__ constexpr int fp8_b_scale_parts() { return C.tile_n == 128 ? 1 : 2; }

/// The fp8 main loop: Mainloop<C>'s four functions (load_tile, mma_tile, drain, release) for e4m3 A
/// and B, both K-major (8-bit wgmma reads only K-major shared memory), one 128-byte swizzle row =
/// 128 K a stage (tile_k 128). Hopper's fp8 MMA accumulates with fewer bits than fp32, so the MMAs
/// of one 128-K block start from zero and the block's sum is promoted into fp32 registers with its
/// scales (1x128 for A's rows, 128x128 for B's, K-major: ScaleParams). M-grouped, no split-K, no
/// op, clusters of one or two CTAs. 128-wide tiles: two blocks' MMAs run into two register sets, so
/// the first's promotion runs under the second's MMAs (the other consumer warpgroup's MMAs fill the
/// rest). 192-wide tiles (DeepGEMM's): three sets of 96 do not fit, so one block set beside the sum,
/// each block waited for and promoted before the next is issued, the two warpgroups interleaving on
/// the tensor cores; a tile straddles two B scale blocks. Each stage is released once its MMAs are
/// waited for.
template <KernelConfig C>
struct Fp8Mainloop {
  static_assert(C.ab == ElemType::e4m3 && C.tile_k == 128 && C.k_row_bytes() == 128,
                "fp8: tile_k is one 128-byte swizzle row of e4m3, one scale block");
  static_assert(C.a_major == AMajor::k && C.b_major == BMajor::k, "fp8 wgmma reads A and B K-major");
  static_assert(C.tile_n == 128 || C.tile_n == 192,
                "fp8: a 128-column tile is one 128x128 B scale block, a 192-column one straddles two");
  static constexpr bool kRowwise = C.fp8_rowwise;
  static_assert(C.group_axis == GroupAxis::m && !C.split_k && C.op.identity() && !C.gathers() && C.cluster_m <= 2,
                "fp8: M-grouped, no split-K, no epilogue op, no gather, clusters of one or two CTAs");
  static_assert(C.cluster_n == 1, "fp8: clusters along M only");
  static_assert(!(C.fp8_rowwise && C.cluster_m > 1), "fp8: rowwise scales on one CTA only (2 CTAs spill 4 bytes)");

  static constexpr int kAtoms = C.m_atoms();
  static constexpr int kFrag = C.tile_n / 2;  // fp32 accumulators of one 64-row atom a thread

  /// A consumer warpgroup's registers: the MMAs' block sum, the promoted sum and where this
  /// thread's rows' A scales and the tile's B scales are (set by start_tile).
  struct Accumulators {
    float block[fp8_block_sets<C>()][kAtoms][kFrag];  // two sets: block kb's MMAs run into set kb % 2 while set (kb - 1) % 2 is promoted
    float sum[kAtoms][kFrag];
    const float* a_scale[kAtoms][2];  // the thread's two rows of each atom: k-block 0 of its scales (rowwise: its scale)
    const float* b_scale;             // the tile's (first) 128-column block of its group: k-block 0 (rowwise: column col0's scale)
    int cols_left;                    // rowwise: the tile's columns inside N (the scales past them are not read)
    // 192-wide, block scales: the elements from b_scale to the next B block's scales, which the
    // tile's columns past its first block read (0 where N ends first: those columns are never
    // stored, and no scale past B's array is read).
    int b_next;
  };

  /// What the store reads once the tile is done.
  __device__ __forceinline__ static auto& result(Accumulators& acc) { return acc.sum; }

  __device__ __forceinline__ static int k_blocks(const TileCoord& tc) {
    return (tc.k_end - tc.k_begin + C.tile_k - 1) / C.tile_k;
  }

  /// Before a tile's MMAs: the promoted sum from zero and the scale pointers of the tile's rows
  /// (a row past A's last, never stored, reads the last row's scales) and of its B block.
  __device__ __forceinline__ static void start_tile(Accumulators& acc, const GroupedGemmParams& p,
                                                    const TileCoord& tc, int row0) {
#pragma unroll
    for (int a = 0; a < kAtoms; ++a)
#pragma unroll
      for (int i = 0; i < kFrag; ++i) acc.sum[a][i] = 0.0f;
    const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>((threadIdx.x / 32) % 4);
    const int last_row = p.scheduler.rows - 1;
#pragma unroll
    for (int a = 0; a < kAtoms; ++a)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = row0 + 64 * a + 16 * warp + lane / 4 + 8 * h;
        acc.a_scale[a][h] = p.scales.a + static_cast<int64_t>(r < last_row ? r : last_row) * p.scales.a_row_stride;
      }
    if constexpr (kRowwise) {  // (G, N): a scale per column, columns contiguous
      acc.b_scale = p.scales.b + static_cast<int64_t>(tc.group) * p.scales.b_group_stride + tc.col0;
      acc.cols_left = p.scheduler.n - tc.col0;
      return;
    }
    // K-major 128x128 scales, (G, ceil(N / 128), KB) with KB contiguous and rows of exactly KB.
    const int kb_count = (p.scheduler.k + 127) / 128;
    acc.b_scale = p.scales.b + static_cast<int64_t>(tc.group) * p.scales.b_group_stride +
                  static_cast<int64_t>(tc.col0 / 128) * kb_count;
    if constexpr (fp8_b_scale_parts<C>() == 2) {
      acc.b_next = tc.col0 / 128 + 1 < (p.scheduler.n + 127) / 128 ? kb_count : 0;
    }
  }

  // ---------------------------------------------------------------- producer
  /// The tile's k-blocks into the ring by TMA (one elected thread), each stage once it is free.
  __device__ __forceinline__ static void load_tile(const MainloopParams& m, const SchedulerParams& sched,
                                                   SharedStorage<C>& s, const TileCoord& tc, uint32_t rank,
                                                   [[maybe_unused]] int thread, PipelineCursor<C.stages>& ring) {
    // 192-wide over 2 CTAs: the rank read again here, not kept across the walk, or the producer's
    // 24 registers (beside consumers of 192 accumulators) spill 4 bytes per tile.
    if constexpr (C.tile_n == 192 && C.cluster_m > 1) rank = ptx::cluster_ctarank();
    const int a_row0 = tc.a_row0 + C.cta_row_offset(static_cast<int>(rank));
    const int blocks = k_blocks(tc);
    for (int kb = 0; kb < blocks; ++kb) load_k_block(m, sched, s, tc, a_row0, kb, ring, rank);
  }

  /// The tile's `kb`-th 128-K block (K past the end is zero-filled by TMA in A and B alike, so a
  /// partial last block adds nothing of the neighbours).
  __device__ __forceinline__ static void load_k_block(const MainloopParams& m, const SchedulerParams& sched,
                                                      SharedStorage<C>& s, const TileCoord& tc, int a_row0, int kb,
                                                      PipelineCursor<C.stages>& ring, uint32_t rank) {
    const int stage = ring.stage;
    ptx::mbarrier_wait(s.empty(stage), ring.phase ^ 1);
    uint64_t* bar = s.full(stage);
    const int k0 = tc.k_begin + kb * C.tile_k;
    ptx::mbarrier_arrive_expect_tx(bar, C.stage_bytes());
    ptx::tma_load_2d(s.a() + stage * C.a_stage_bytes(), &m.map_a, k0, a_row0, bar);
    load_b<C>(m, sched.n, s.b() + stage * C.b_stage_bytes(), k0, tc.col0, tc.group, bar, rank);
    ring.advance();
  }

  // ---------------------------------------------------------------- consumers
  /// The tile's k-blocks, stage by stage from `cur` on (advanced past them), each promoted.
  /// (The tile and the consumer are the 16-bit loop's, for its K-edge clearing: M-grouped fp8 has none.)
  /// 128-wide tiles: blocks kb and kb + 1 are issued into the two register sets, then the first is
  /// waited for (wgmma.wait_group 1) and promoted while the second's MMAs run. 192-wide: one set
  /// (mma_tile_one_set).
  __device__ __forceinline__ static void mma_tile(Accumulators& acc, SharedStorage<C>& s,
                                                  [[maybe_unused]] const TileCoord& tc, int blocks,
                                                  PipelineCursor<C.stages>& cur, int a_atom0, [[maybe_unused]] int live_atoms,
                                                  [[maybe_unused]] int consumer, bool release_lane) {
    if constexpr (fp8_block_sets<C>() == 1) {
      mma_tile_one_set(acc, s, tc, blocks, cur, a_atom0, release_lane);
    } else {
      // Two blocks a turn, nothing in flight across turns (ptxas serialises every wgmma when a set
      // read after wait_group 1 was issued in an earlier turn, C7520): the first block's promotion
      // runs under the second's MMAs, the second's after them. The first block's stage (and the
      // turn before's second) go back to the producer as soon as the first block is done. The
      // scales are read a turn ahead (ptxas sinks a load below the stage's wait and the first MMA,
      // so read in the turn that uses them they stalled its promotions: 1-2.5% slower on an H100,
      // bench_fp8 A/B of 2026-12-07).
      BlockScales scales[2], ahead[2];
      load_scales(acc, 0, ahead[0]);
      if (blocks > 1) load_scales(acc, 1, ahead[1]);
      for (int kb = 0; kb < blocks; kb += 2) {
        const int stage0 = cur.stage;
        scales[0] = ahead[0];
        scales[1] = ahead[1];
        if (kb + 2 < blocks) load_scales(acc, kb + 2, ahead[0]);
        if (kb + 3 < blocks) load_scales(acc, kb + 3, ahead[1]);
        issue<0>(acc, s, cur, a_atom0);
        if (kb + 1 < blocks) {
          issue<1>(acc, s, cur, a_atom0);
          ptx::wgmma_wait<1>();
          if (kb > 0 && release_lane) release(s, stage0 == 0 ? C.stages - 1 : stage0 - 1);
          if (release_lane) release(s, stage0);
          promote<0>(acc, scales[0]);
          ptx::wgmma_wait<0>();
          promote<1>(acc, scales[1]);  // (its stage is released by the next turn, or after the tile)
        } else {
          ptx::wgmma_wait<0>();
          if (kb > 0 && release_lane) release(s, stage0 == 0 ? C.stages - 1 : stage0 - 1);
          promote<0>(acc, scales[0]);
        }
      }
    }
  }

  /// 192-wide tiles: one block set. Each block's MMAs are waited for (its stage released, but for
  /// the tile's last, as in the two-set loop) and the block promoted before the next block's are
  /// issued; the other consumer warpgroup's MMAs keep the tensor cores busy meanwhile. Nothing is in
  /// flight across blocks, so no wgmma is serialised. Block kb + 1's scales are read before block
  /// kb's MMAs (as in the two-set loop). Which columns read the tile's
  /// second B scale block is uniform over the tile, so the promotion is chosen by a branch between
  /// two unrolled forms, not a select per register.
  __device__ __forceinline__ static void mma_tile_one_set(Accumulators& acc, SharedStorage<C>& s, const TileCoord& tc,
                                                          int blocks, PipelineCursor<C.stages>& cur, int a_atom0,
                                                          bool release_lane) {
    // The tile's first 128 columns in one B block (it starts on one), or its first 64 (it starts mid-block).
    const bool first_block_whole = kRowwise || tc.col0 % 128 == 0;
    BlockScales scales, ahead;
    load_scales(acc, 0, ahead);
    for (int kb = 0; kb < blocks; ++kb) {
      const int stage = cur.stage;
      scales = ahead;
      if (kb + 1 < blocks) load_scales(acc, kb + 1, ahead);
      issue<0>(acc, s, cur, a_atom0);
      ptx::wgmma_wait<0>();
      if (kb + 1 < blocks && release_lane) release(s, stage);  // (the last block's: after the tile, by consume)
      if (first_block_whole)
        promote<0, 128>(acc, scales);
      else
        promote<0, 64>(acc, scales);
    }
  }

#if defined(GEMMOPS_FP8_LATE_SCALE_PRODUCTS)
  /// The scales as loaded, multiplied in promote (an A/B define). Multiplied in load_scales, the
  /// product sits in the loads' basic block, and ptxas places it before the stage's wait (a spin
  /// loop, so a block boundary): each block's issue then waits on the loads' latency (the 192-wide
  /// loop's SASS: LDG, then FMUL of its result, then the full barrier's try-wait and the QGMMAs).
  /// Multiplied in promote, the loads have the block's MMAs to arrive, as DeepGEMM's shared-memory
  /// scales have, and the products are the same (bit for bit).
  static constexpr bool kLateScaleProducts = !kRowwise;
#else
  static constexpr bool kLateScaleProducts = false;
#endif

  /// One block's scales: A's for the thread's rows of each atom, times B's of the tile's columns in
  /// each B block they read (rowwise: 1, applied in drain); with kLateScaleProducts, A's (row[a][h][0])
  /// and B's (b) as loaded, multiplied in promote.
  struct BlockScales {
    float row[kAtoms][2][kLateScaleProducts ? 1 : fp8_b_scale_parts<C>()];
#if defined(GEMMOPS_FP8_LATE_SCALE_PRODUCTS)
    float b[fp8_b_scale_parts<C>()];
#endif
  };

  __device__ __forceinline__ static void load_scales(const Accumulators& acc, int kb, BlockScales& out) {
    if constexpr (kLateScaleProducts) {
#if defined(GEMMOPS_FP8_LATE_SCALE_PRODUCTS)
      out.b[0] = __ldg(acc.b_scale + kb);
      if constexpr (fp8_b_scale_parts<C>() == 2) out.b[1] = __ldg(acc.b_scale + acc.b_next + kb);
#pragma unroll
      for (int a = 0; a < kAtoms; ++a)
#pragma unroll
        for (int h = 0; h < 2; ++h) out.row[a][h][0] = __ldg(acc.a_scale[a][h] + kb);
#endif
    } else if constexpr (kRowwise) {
#pragma unroll
      for (int a = 0; a < kAtoms; ++a)
#pragma unroll
        for (int j = 0; j < fp8_b_scale_parts<C>(); ++j) out.row[a][0][j] = out.row[a][1][j] = 1.0f;
    } else if constexpr (fp8_b_scale_parts<C>() == 1) {
      const float sb = __ldg(acc.b_scale + kb);
#pragma unroll
      for (int a = 0; a < kAtoms; ++a)
#pragma unroll
        for (int h = 0; h < 2; ++h) out.row[a][h][0] = __ldg(acc.a_scale[a][h] + kb) * sb;
    } else {
      const float sb[2] = {__ldg(acc.b_scale + kb), __ldg(acc.b_scale + acc.b_next + kb)};
#pragma unroll
      for (int a = 0; a < kAtoms; ++a)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float sa = __ldg(acc.a_scale[a][h] + kb);
          out.row[a][h][0] = sa * sb[0];
          out.row[a][h][1] = sa * sb[1];
        }
    }
  }

  /// The next block into register set kB: its four k32 MMAs from zero, committed; `cur` steps on. A
  /// warpgroup without live atoms issues them too (their rows are never stored): a branch around
  /// them made ptxas serialise every wgmma (C7520).
  template <int kB>
  __device__ __forceinline__ static void issue(Accumulators& acc, SharedStorage<C>& s, PipelineCursor<C.stages>& cur,
                                               int a_atom0) {
    const int stage = cur.stage;
    ptx::mbarrier_wait(s.full(stage), cur.phase);
    {
      constexpr int kAtomBytes = 64 * C.k_row_bytes();
      const uint8_t* a_tile = s.a() + stage * C.a_stage_bytes() + a_atom0 * kAtomBytes;
      const uint64_t desc_b = ptx::make_smem_desc_sw128(s.b() + stage * C.b_stage_bytes(), 16, 1024);
#pragma unroll
      for (int a = 0; a < kAtoms; ++a) ptx::fence_registers(acc.block[kB][a]);
      ptx::wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < C.tile_k / 32; ++kk) {  // 32 e4m3 = 32 bytes along the swizzled row
#pragma unroll
        for (int a = 0; a < kAtoms; ++a) {
          const uint64_t desc_a = ptx::make_smem_desc_sw128(a_tile + a * kAtomBytes, 16, 1024);
          if constexpr (C.tile_n == 128)
            ptx::wgmma_m64n128k32_f32_e4m3(acc.block[kB][a], ptx::desc_advance(desc_a, 32 * kk),
                                           ptx::desc_advance(desc_b, 32 * kk), kk > 0 ? 1 : 0);
          else  // (B's 192 rows of one stage, 1024-byte 8-row atoms as at 128)
            ptx::wgmma_m64n192k32_f32_e4m3(acc.block[kB][a], ptx::desc_advance(desc_a, 32 * kk),
                                           ptx::desc_advance(desc_b, 32 * kk), kk > 0 ? 1 : 0);
        }
      }
      ptx::wgmma_commit();
#pragma unroll
      for (int a = 0; a < kAtoms; ++a) ptx::fence_registers(acc.block[kB][a]);
    }
    cur.advance();
  }

  /// Which of the tile's B scale blocks accumulator i of an atom reads (0: the first): its column,
  /// 8 (i / 4) + 2 (lane % 4) + i % 2, is among the tile's first `split` whatever the lane, for a
  /// split that is a multiple of 8.
  __device__ static constexpr int b_part(int i, int split) { return 8 * (i / 4) < split ? 0 : 1; }

  /// Register set kB's block sum into the promoted sum, times its scales (accumulator i of an atom
  /// sits on row lane / 4 + 8 ((i / 2) % 2) of the warp's 16). kSplit: the tile's columns in its
  /// first B scale block.
  template <int kB, int kSplit = C.tile_n>
  __device__ __forceinline__ static void promote(Accumulators& acc, const BlockScales& sc) {
#pragma unroll
    for (int a = 0; a < kAtoms; ++a) ptx::fence_registers(acc.block[kB][a]);
#pragma unroll
    for (int a = 0; a < kAtoms; ++a) {
      if constexpr (kRowwise) {
#pragma unroll
        for (int i = 0; i < kFrag; ++i) acc.sum[a][i] += acc.block[kB][a][i];
      } else if constexpr (kLateScaleProducts) {
#if defined(GEMMOPS_FP8_LATE_SCALE_PRODUCTS)
        // The atom's scales (two rows x the B blocks its columns read), once a block.
        float scale[2][fp8_b_scale_parts<C>()];
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int j = 0; j < fp8_b_scale_parts<C>(); ++j) scale[h][j] = sc.row[a][h][0] * sc.b[j];
#pragma unroll
        for (int i = 0; i < kFrag; ++i)
          acc.sum[a][i] = fmaf(acc.block[kB][a][i], scale[(i / 2) % 2][b_part(i, kSplit)], acc.sum[a][i]);
#endif
      } else {
#pragma unroll
        for (int i = 0; i < kFrag; ++i)
          acc.sum[a][i] = fmaf(acc.block[kB][a][i], sc.row[a][(i / 2) % 2][b_part(i, kSplit)], acc.sum[a][i]);
      }
    }
  }

  /// Nothing is in flight after mma_tile (each block is waited for before its promotion). Rowwise:
  /// the sum times its row's and its column's scales, once (accumulator i of an atom sits on row
  /// lane / 4 + 8 ((i / 2) % 2) of the warp's 16 and column 8 (i / 4) + 2 (lane % 4) + i % 2).
  __device__ __forceinline__ static void drain(Accumulators& acc) {
#pragma unroll
    for (int a = 0; a < kAtoms; ++a) ptx::fence_registers(acc.sum[a]);
    if constexpr (kRowwise) {
      const int q = static_cast<int>(threadIdx.x % 4);
#pragma unroll
      for (int j = 0; j < kFrag / 4; ++j) {
        float col_scale[2];
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int c = 8 * j + 2 * q + e;
          col_scale[e] = c < acc.cols_left ? __ldg(acc.b_scale + c) : 0.0f;  // (a column past N is never stored)
        }
#pragma unroll
        for (int a = 0; a < kAtoms; ++a) {
          const float rows[2] = {__ldg(acc.a_scale[a][0]), __ldg(acc.a_scale[a][1])};
#pragma unroll
          for (int i = 4 * j; i < 4 * j + 4; ++i) acc.sum[a][i] *= rows[(i / 2) % 2] * col_scale[i % 2];
        }
      }
    }
  }

  __device__ __forceinline__ static void release(SharedStorage<C>& s, int stage) { Mainloop<C>::release(s, stage); }

};

}  // namespace gemmops::kernels::sm90
