// kernels/sm90/stage_loads.cuh: the producer's loads of one stage of A and B: TMA boxes (B
// multicast to a cluster, or as the gated op's two halves), or, gathered along K, the producer
// warpgroup's cp.async copies (gather_k.cuh)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

#include "ptx/cp_async.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "sm90/config.cuh"
#include "sm90/gather_k.cuh"
#include "sm90/params.cuh"
#include "sm90/shared_storage.cuh"
#include "sm90/tile_scheduler.cuh"

namespace gemmops::kernels::sm90 {

using ::cuda::std::uint32_t;
using ::cuda::std::uint64_t;
using ::cuda::std::uint8_t;

// A K-major operand is read by TMA along K from 16-byte-aligned starts only (an unaligned start in
// the contiguous dimension is an illegal instruction), so K-grouped k-blocks then start at a
// multiple of 8 below the group's first k, and the k before it are cleared like the tail.
template <KernelConfig C>
inline constexpr int kKBlockAlign =
    C.group_axis == GroupAxis::k && (C.a_major == AMajor::k || C.b_major == BMajor::k) ? 8 : 1;

/// One stage's B tile loaded by this CTA alone, in the map's boxes: without a cluster (one box, or
/// one 64-wide N atom a box), or in a 2-CTA cluster's paired unit (TileCoord::paired), where the
/// CTAs take adjacent column tiles and neither shares its B (each box a CTA's share of the rows or
/// N atoms). A gated op with concatenated halves (gate = product columns [0, I), up = [I, 2I))
/// loads the tile as two halves: gate columns col0/2 .. into the first TILE_N/2 rows (or N atoms)
/// of the stage, the matching up columns I + col0/2 .. into the second, so that accumulator column j
/// pairs with j + TILE_N/2 in the same thread. `n`: the product's N, which only the halves read.
template <KernelConfig C>
__device__ __forceinline__ void load_b_own(const MainloopParams& m, int n, uint8_t* b_dst, int k0, int col0,
                                           int b_group, uint64_t* bar) {
  if constexpr (C.op.split_b()) {
    constexpr int kHalf = C.tile_n / 2;
    const int gate0 = col0 / 2, up0 = n / 2 + col0 / 2;
    if constexpr (C.b_major == BMajor::k) {
#pragma unroll
      for (int h = 0; h < 2; ++h)
        ptx::tma_load_3d(b_dst + h * kHalf * C.k_row_bytes(), &m.map_b, k0, h == 0 ? gate0 : up0, b_group, bar);
    } else {
      static_assert(kHalf % 64 == 0, "N-major B halves are whole 64-wide atoms");
      constexpr int kAtomsPerHalf = kHalf / 64;
#pragma unroll
      for (int j = 0; j < C.tile_n / 64; ++j) {
        const int c = j < kAtomsPerHalf ? gate0 + 64 * j : up0 + 64 * (j - kAtomsPerHalf);
        ptx::tma_load_3d(b_dst + j * 64 * C.k_row_bytes(), &m.map_b, c, k0, b_group, bar);
      }
    }
  } else if constexpr (C.b_major == BMajor::k) {
#pragma unroll
    for (int r0 = 0; r0 < C.tile_n; r0 += C.b_box_rows())  // (one box without a cluster)
      ptx::tma_load_3d(b_dst + r0 * C.k_row_bytes(), &m.map_b, k0, col0 + r0, b_group, bar);
  } else {
#pragma unroll
    for (int j = 0; j < C.tile_n / 64; ++j)  // one 64-wide N atom per box
      ptx::tma_load_3d(b_dst + j * 64 * C.k_row_bytes(), &m.map_b, col0 + 64 * j, k0, b_group, bar);
  }
}

/// A gated op's B halves (load_b_own) over a 2-CTA cluster: each CTA loads one half and multicasts it.
template <KernelConfig C>
__device__ __forceinline__ void load_b_halves(const MainloopParams& m, int n, uint8_t* b_dst, int k0, int col0,
                                              int b_group, uint64_t* bar, uint32_t rank) {
  static_assert(C.cluster_m == 2, "one half per CTA");
  constexpr int kHalf = C.tile_n / 2;
  const int gate0 = col0 / 2, up0 = n / 2 + col0 / 2;
  if constexpr (C.b_major == BMajor::k) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (h != static_cast<int>(rank)) continue;
      ptx::tma_load_3d_multicast(b_dst + h * kHalf * C.k_row_bytes(), &m.map_b, k0, h == 0 ? gate0 : up0, b_group,
                                 bar, 0x3);
    }
  } else {
    static_assert(kHalf % 64 == 0, "N-major B halves are whole 64-wide atoms");
    constexpr int kAtomsPerHalf = kHalf / 64;
#pragma unroll
    for (int j = 0; j < C.tile_n / 64; ++j) {
      if (j % 2 != static_cast<int>(rank)) continue;
      const int c = j < kAtomsPerHalf ? gate0 + 64 * j : up0 + 64 * (j - kAtomsPerHalf);
      ptx::tma_load_3d_multicast(b_dst + j * 64 * C.k_row_bytes(), &m.map_b, c, k0, b_group, bar, 0x3);
    }
  }
}

/// One stage's B tile (TMA; with a cluster along M each CTA loads its share and multicasts it).
/// `n`: the product's N, which only the gated halves read.
template <KernelConfig C>
__device__ __forceinline__ void load_b(const MainloopParams& m, int n, uint8_t* b_dst, int k0, int col0, int b_group,
                                       uint64_t* bar, uint32_t rank) {
  if constexpr (C.cluster_m == 1) {
    load_b_own<C>(m, n, b_dst, k0, col0, b_group, bar);
  } else if constexpr (C.op.split_b()) {
    load_b_halves<C>(m, n, b_dst, k0, col0, b_group, bar, rank);
  } else {
    // Each CTA loads its share of the B tile and multicasts it to the whole cluster, which
    // works on the same group and columns: B crosses L2 once per cluster instead of per CTA.
    constexpr ::cuda::std::uint16_t kMask = (1u << C.cluster_m) - 1;
    if constexpr (C.b_major == BMajor::k) {
      const int r0 = static_cast<int>(rank) * C.b_rows_per_cta();
      ptx::tma_load_3d_multicast(b_dst + r0 * C.k_row_bytes(), &m.map_b, k0, col0 + r0, b_group, bar,
                                 kMask);
    } else {
#pragma unroll
      for (int j = static_cast<int>(rank); j < C.tile_n / 64; j += C.cluster_m)  // (3 atoms: 2 + 1)
        ptx::tma_load_3d_multicast(b_dst + j * 64 * C.k_row_bytes(), &m.map_b, col0 + 64 * j, k0,
                                   b_group, bar, kMask);
    }
  }
}

/// One stage's A tile by TMA: K-major one box, M-major one 64-row M atom per box.
template <KernelConfig C>
__device__ __forceinline__ void load_a(const MainloopParams& m, uint8_t* a_dst, int k0, int a_row0, uint64_t* bar) {
  if constexpr (C.a_major == AMajor::k) {
    ptx::tma_load_2d(a_dst, &m.map_a, k0, a_row0, bar);
  } else {
#pragma unroll
    for (int j = 0; j < C.tile_m / 64; ++j)
      ptx::tma_load_2d(a_dst + j * 64 * C.k_row_bytes(), &m.map_a, a_row0 + 64 * j, k0, bar);
  }
}

/// One stage's A tile shared by a cluster along N: each CTA loads its share of the rows (K-major:
/// one box of tile_m / cluster_n rows; M-major: every cluster_n-th 64-row atom) and multicasts it to
/// the cluster, whose CTAs work on the same rows and adjacent column tiles.
template <KernelConfig C>
__device__ __forceinline__ void load_a_multicast(const MainloopParams& m, uint8_t* a_dst, int k0, int a_row0,
                                                 uint64_t* bar, uint32_t rank) {
  static_assert(C.cluster_n == 2 && C.cluster_m == 1, "A is shared along N by two CTAs");
  constexpr ::cuda::std::uint16_t kMask = (1u << C.cluster_n) - 1;
  if constexpr (C.a_major == AMajor::k) {
    const int r0 = static_cast<int>(rank) * C.a_rows_per_cta();
    ptx::tma_load_2d_multicast(a_dst + r0 * C.k_row_bytes(), &m.map_a, k0, a_row0 + r0, bar, kMask);
  } else {
#pragma unroll
    for (int j = static_cast<int>(rank); j < C.tile_m / 64; j += C.cluster_n)
      ptx::tma_load_2d_multicast(a_dst + j * 64 * C.k_row_bytes(), &m.map_a, a_row0 + 64 * j, k0, bar, kMask);
  }
}

/// A K-grouped stage with gathered operands (gather_k.cuh), by the producer warpgroup's `thread`,
/// whose k-rows' indices (`rows`) were read a k-block ahead: once the slot is free, thread 0 loads
/// the operand that is not gathered by TMA (arriving with its bytes), and every thread copies its
/// share of the gathered ones and arrives once they land (.noinc: the barrier counts 1 + 128).
/// `extents`: the rows of A and N that the copies stop at (the scheduler's params hold them).
template <KernelConfig C>
__device__ __forceinline__ void produce_gathered_k(const MainloopParams& m, const SchedulerParams& extents,
                                                   SharedStorage<C>& s, const TileCoord& tc, int a_row0, int k0,
                                                   int stage, uint32_t phase, uint32_t rank, int thread,
                                                   const GatheredKOperands<C>& rows) {
  ptx::mbarrier_wait(s.empty(stage), phase ^ 1);
  uint64_t* bar = s.full(stage);
  uint8_t* a_dst = s.a() + stage * C.a_stage_bytes();
  uint8_t* b_dst = s.b() + stage * C.b_stage_bytes();
  if (thread == 0) {
    ptx::mbarrier_arrive_expect_tx(bar, (C.gather_a ? 0 : C.a_stage_bytes()) + (C.gather_b ? 0 : C.b_stage_bytes()));
    if constexpr (!C.gather_a) load_a<C>(m, a_dst, k0, a_row0, bar);
    if constexpr (!C.gather_b) load_b<C>(m, extents.n, b_dst, k0, tc.col0, 0, bar, rank);  // (K-grouped B: group 0)
  }
  if constexpr (C.gather_a) rows.a.copy(m.a, m.a_row_stride, a_row0, extents.rows, a_dst, thread);
  if constexpr (C.gather_b) rows.b.copy(m.b, m.b_row_stride, tc.col0, extents.n, b_dst, thread);
  ptx::cp_async_mbarrier_arrive_noinc(bar);
}

}  // namespace gemmops::kernels::sm90
