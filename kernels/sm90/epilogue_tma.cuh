// kernels/sm90/epilogue_tma.cuh: the store of one consumer warpgroup's accumulators through shared
// memory and TMA bulk stores, which run on while the warpgroup starts its next tile's main loop.
// TMA clips a box only at its tensor map's bounds, so a slab whose 64 rows run past the group's
// end goes through out's ragged map (params.cuh), whose bounds fall at that end.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

#include "ptx/tma_store.cuh"
#include "ptx/warp.cuh"
#include "sm90/barriers.cuh"
#include "sm90/config.cuh"
#include "sm90/epilogue.cuh"
#include "sm90/epilogue_op.cuh"
#include "sm90/params.cuh"

namespace gemmops::kernels::sm90 {

/// kMMajor (KernelConfig::out_m_major, K-grouped): each box is staged transposed and stored through
/// the 3D (M, N, G) map, which clips it at its group's M and N: no slab needs the masked store.
template <ElemType kOut, bool kMMajor = false>
struct TmaStoreEpilogue {
  static_assert(kOut != ElemType::fp32, "the TMA epilogue stages 16-bit outputs");
  static constexpr int kBoxBytes = 64 * 128;  // 64 rows x 64 columns of 16-bit, 128B-swizzled

  /// The store signature every mechanism shares (epilogue.cuh): stores out's tile (kOp.out_cols(kTileN)
  /// columns) of the warpgroup's accumulators through kOp (epilogue_op.cuh), as below.
  template <EpilogueOp kOp, int kTileN, int kAtoms, int kRing, int kLen>
  __device__ __forceinline__ static void store(float (&acc)[kAtoms][kLen], const TileContext& t,
                                               ::cuda::std::uint8_t* staging, int& ring_pos, const GroupedGemmParams& p) {
    static_assert(!kOp.activation_grad,
                  "the TMA store does not write the activation's backward yet: the direct store does (supports() says so)");
    if constexpr (kOp.pre_activation) store_pre_activation<kOp, kTileN, kAtoms, kRing>(acc, t, staging, ring_pos, p);
    const OpFragment<kOp, kTileN, kAtoms, kLen> f(acc, p, t);
    if constexpr (kMMajor) {
      static_assert(kOp.identity(), "an M-major out is the K-grouped form's, which takes no op");
      // Every 64-row slab with rows of the group goes by TMA through the 3D map, which clips rows
      // past the group's M and columns past N. Group g's rows of out are [g * M, (g + 1) * M)
      // (M = p.scheduler.rows), so a slab's m is its row less g * M.
      const int rows_left = t.row_end - t.row0;
      const int live = rows_left <= 0 ? 0 : ((rows_left + 63) / 64 < kAtoms ? (rows_left + 63) / 64 : kAtoms);
      if (live > 0)
        store_atoms_by_tma<kTileN, kAtoms, kRing>(f, live, p, staging, ring_pos, t.consumer,
                                                 t.row0 - t.group * p.scheduler.rows, t.col0, t.group);
    } else {
      store_slabs<kOp, kOp.out_cols(kTileN), kAtoms, kRing>(f, p, staging, ring_pos, t.consumer, t.row0, t.row_end,
                                                             out_col0<kOp>(t.col0));
    }
  }

  /// Stores a warpgroup's kAtoms 64-row slabs starting at row0. `staging`: kRing boxes, 1024-byte
  /// aligned, used as a ring (fewer boxes than a tile has only wait more often); `ring_pos` is the
  /// warpgroup's place in it (0 before its first tile, carried from tile to tile). Every slab with
  /// rows of the group goes by TMA through out's ragged map (params.cuh), which clips the slab that
  /// straddles the group's end at row_end; slabs past the end store nothing. (The straddling slab
  /// took the masked direct store before, and a short tile drained the ring: H100, one process,
  /// Qwen3-30B-A3B's down 1.10x and up dgrad 1.07x faster by TMA.) The slabs are kTileN columns of
  /// out from col0; f.entry(a, i, s) is entry i of atom a's fragment (fp32), f.row_scale(a, h) its
  /// rows' scales. kOp gives the geometry: out has half the product's columns when the op is gated.
  template <EpilogueOp kOp, int kTileN, int kAtoms, int kRing, typename Fragment>
  __device__ __forceinline__ static void store_slabs(const Fragment& f, const GroupedGemmParams& p,
                                                     ::cuda::std::uint8_t* staging, int& ring_pos, int consumer,
                                                     int row0, int row_end, int col0) {
    static_assert(kTileN % 64 == 0, "TMA stores 64-column boxes");
    const int rows_left = row_end - row0;
    const int live = rows_left <= 0 ? 0 : ((rows_left + 63) / 64 < kAtoms ? (rows_left + 63) / 64 : kAtoms);
    if (live > 0) store_atoms_by_tma<kTileN, kAtoms, kRing>(f, live, p, staging, ring_pos, consumer, row0, col0, 0, row_end);
  }

  /// The first `atoms` (> 0) 64-row slabs by TMA, box by box. The staging boxes form a ring, written
  /// in order, each box's store its own bulk group: before a box is overwritten only its own
  /// previous store has to have read it, so up to kRing - 1 boxes of stores stay in flight while the
  /// next ones are staged. (Waiting for all stores at once drained the queue every tile: store-bound
  /// shapes ran at ~2.1-2.7 TB/s.) row0: the first slab's row (kMMajor: its m in the group).
  /// row_end (row-major out): the group's end, where the ragged map clips a slab running past it.
  template <int kTileN, int kAtoms, int kRing, typename Fragment>
  __device__ __forceinline__ static void store_atoms_by_tma(const Fragment& f, int atoms, const GroupedGemmParams& p,
                                                            ::cuda::std::uint8_t* staging, int& ring_pos,
                                                            int consumer, int row0, int col0, int group,
                                                            int row_end = 0x7fffffff) {
    constexpr int kBoxes = kTileN / 64;
#pragma unroll
    for (int a = 0; a < kAtoms; ++a) {
      if (a >= atoms) break;
      const float s0 = f.row_scale(a, 0), s1 = f.row_scale(a, 1);
      const int slab_row = row0 + 64 * a;
#pragma unroll
      for (int box = 0; box < kBoxes; ++box)
        store_box<kRing>(
            [&](int j, int half) {
              const float s = half ? s1 : s0;
              return pack(f.entry(a, 4 * j + 2 * half, s), f.entry(a, 4 * j + 2 * half + 1, s));
            },
            8 * box, staging, ring_pos, consumer, [&](const void* dst) {
              if constexpr (kMMajor) {
                ptx::tma_store_3d(&p.store.map_out, dst, slab_row, col0 + 64 * box, group);
              } else {  // out's ragged map: the box's rows from row_end on are clipped
                const RaggedRows rows = ragged_rows(slab_row, row_end);
                ptx::tma_store_3d(&p.store.map_out, dst, col0 + 64 * box, rows.row, rows.end);
              }
            });
    }
    // The waits above count on every box of the ring having been stored before its turn comes
    // again; a short tile (a group's last) breaks that, so it drains, and the ring starts afresh.
    if (atoms < kAtoms) {
      if (threadIdx.x % 128 == 0) ptx::tma_store_wait_read<0>();
      ring_pos = 0;
    }
  }

  /// A ragged map's two row coordinates (params.cuh) for the 64-row slab at slab_row of a group
  /// ending at row_end: the box's rows from row_end on fall past the map's bounds.
  struct RaggedRows {
    int row, end;
  };
  __device__ __forceinline__ static RaggedRows ragged_rows(int slab_row, int row_end) {
    const int end = row_end < slab_row + 64 ? row_end : slab_row + 64;
    return {64 - (end - slab_row), end};
  }

  __device__ __forceinline__ static ::cuda::std::uint32_t pack(float v0, float v1) {
    return kOut == ElemType::bf16 ? ptx::pack_bf16x2(v0, v1) : ptx::pack_f16x2(v0, v1);
  }

  /// Stages one 64x64 box of a 64-row slab and starts its TMA store: `pair_at(j, half)` gives a
  /// thread's 16-bit pair of 8-column block j of the fragment, the box's blocks block0 .. block0 + 7,
  /// and `issue(dst)` (thread 0) starts the bulk store of the staged box at `dst` through its map.
  /// Called by all 128 threads of the warpgroup alike. kMMajor: the box is staged transposed, the
  /// thread's pair (row r, columns c, c + 1) to staging rows c and c + 1 (out's N) at column r (out's
  /// M), in the 128-byte swizzle of the 3D map's (64 M, 64 N) box (element (n, m) at
  /// n * 128 + ((m / 8) ^ (n % 8)) * 16 + (m % 8) * 2; a warp's 16-bit stores of one (j, half) fall in
  /// 4 distinct 16-byte chunks).
  template <int kRing, typename PairAt, typename Issue>
  __device__ __forceinline__ static void store_box(PairAt&& pair_at, int block0, ::cuda::std::uint8_t* staging,
                                                   int& ring_pos, int consumer, Issue&& issue) {
    static_assert(kRing >= 1, "at least one staging box");
    const int t = threadIdx.x % 128;
    const int barrier = warpgroup_barrier(consumer);  // this warpgroup's own (barriers.cuh)
    const int r = (t / 32) * 16 + (t % 32) / 4;  // row in the slab (and r + 8)
    if (t == 0) ptx::tma_store_wait_read<kRing - 1>();
    ptx::named_barrier_sync(barrier, 128);
    ::cuda::std::uint8_t* dst = staging + ring_pos * kBoxBytes;
    const auto dst_shared = static_cast<::cuda::std::uint32_t>(__cvta_generic_to_shared(dst));
    ring_pos = ring_pos + 1 == kRing ? 0 : ring_pos + 1;
#pragma unroll
    for (int chunk = 0; chunk < 8; ++chunk) {
      const int j = block0 + chunk;  // 8-column block of the accumulator fragment
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int rr = r + 8 * half;
        if constexpr (kMMajor) {
          const ::cuda::std::uint32_t v = pair_at(j, half);
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int n = 8 * chunk + 2 * (t % 4) + e;
            const int offset = n * 128 + (((rr >> 3) ^ (n & 7)) << 4) + (rr & 7) * 2;
            ptx::st_shared_u16(dst_shared + offset, static_cast<::cuda::std::uint16_t>(e ? v >> 16 : v & 0xffffu));
          }
        } else {
          // The 128-byte swizzle TMA expects: 16-byte chunk c of row rr sits at chunk c ^ (rr % 8).
          const int offset = rr * 128 + ((chunk ^ (rr & 7)) * 16) + (t % 4) * 4;
          ptx::st_shared_u32(dst_shared + offset, pair_at(j, half));
        }
      }
    }
    ptx::fence_proxy_async_shared();
    ptx::named_barrier_sync(barrier, 128);
    if (t == 0) {
      issue(dst);
      ptx::tma_store_commit();
    }
  }

  /// The forward's pre-activation (EpilogueOp::pre_activation): v = acc (the accumulators start from
  /// the bias) at the product's columns, staged through the same ring as out and stored through
  /// params.map_pre_activation, h's ragged view with a fourth dimension for the halves
  /// (launch_grouped.cpp): dims {h's columns of a half, 64, rows + 1, halves}. Concatenated gated
  /// halves: the tile's first kTileN / 2 columns are gate columns col0 / 2 .. of half 0, the rest the
  /// same up columns of half 1 (I columns on), each clipped at I; otherwise one half of N columns.
  /// The zero tail's rows (and tiles without k-blocks and bias) get zeros. 16-bit h only.
  template <EpilogueOp kOp, int kTileN, int kAtoms, int kRing, int kLen>
  __device__ __forceinline__ static void store_pre_activation(const float (&acc)[kAtoms][kLen], const TileContext& t,
                                                              ::cuda::std::uint8_t* staging, int& ring_pos,
                                                              const GroupedGemmParams& p) {
    static_assert(!kMMajor && kTileN % (kOp.split_b() ? 128 : 64) == 0, "whole 64-column boxes of each half");
    constexpr int kBoxes = kTileN / 64;
    constexpr int kHalfBoxes = kOp.split_b() ? kBoxes / 2 : kBoxes;
    const bool zeros = !kOp.bias && t.no_k;  // nothing set the registers
    const int h_col0 = kOp.split_b() ? t.col0 / 2 : t.col0;
#pragma unroll
    for (int a = 0; a < kAtoms; ++a) {
      if (a >= t.live_atoms) break;
      const RaggedRows rows = ragged_rows(t.row0 + 64 * a, t.row_end);
#pragma unroll
      for (int box = 0; box < kBoxes; ++box)
        store_box<kRing>(
            [&](int j, int half) {
              return zeros ? 0u : pack(acc[a][4 * j + 2 * half], acc[a][4 * j + 2 * half + 1]);
            },
            8 * box, staging, ring_pos, t.consumer, [&](const void* dst) {
              ptx::tma_store_4d(&p.map_pre_activation, dst, h_col0 + 64 * (box % kHalfBoxes), rows.row, rows.end,
                                box / kHalfBoxes);
            });
    }
  }

  /// Before the CTA exits: the last stores must be complete.
  __device__ __forceinline__ static void finish() {
    if (threadIdx.x % 128 == 0) ptx::tma_store_wait_all();
  }
};

}  // namespace gemmops::kernels::sm90
