// kernels/sm90/epilogue_tma.cuh: the store of one consumer warpgroup's accumulators through shared
// memory and TMA bulk stores, which run on while the warpgroup starts its next tile's main loop.
// TMA clips a box only at its tensor map's bounds, so a slab whose 64 rows run past the group's
// end goes through out's ragged map (params.cuh), whose bounds fall at that end.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
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
    if constexpr (kOp.activation_grad) {  // out is dh, staged with the other outputs
      static_assert(!kMMajor, "the activation's backward is the M-grouped form's");
      store_activation_grad<kOp, kTileN, kAtoms, kRing>(acc, t, staging, ring_pos, p);
      return;
    }
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
    [[maybe_unused]] const int r = (t / 32) * 16 + (t % 32) / 4;  // row in the slab (and r + 8)
    if (t == 0) ptx::tma_store_wait_read<kRing - 1>();
    ptx::named_barrier_sync(barrier, 128);
    ::cuda::std::uint8_t* dst = staging + ring_pos * kBoxBytes;
    const auto dst_shared = static_cast<::cuda::std::uint32_t>(__cvta_generic_to_shared(dst));
    ring_pos = ring_pos + 1 == kRing ? 0 : ring_pos + 1;
    // Staging by stmatrix (A/B defines): a warp instruction stores the two 8x8 matrices of block c
    // (the warp's 16 rows as two 8-row halves), 8 instructions a box where the 4-byte stores take 16
    // (the M-major box's 16-bit ones 32). Lane L < 16 gives the address of row L % 8 of matrix L / 8:
    // a row of 8 elements is one 16-byte chunk of the swizzle, so the rows land where the pairs did.
    // Matrix m's row i: the box's row 16 w + 8 m + i, chunk c ^ i; M-major (stored transposed), the
    // box's row n = 8 c + i, chunk (2 w + m) ^ i. On an H100 (bench/NOTES.md v31) it sped the M-major
    // boxes (dW1 1.014-1.031x) and slowed the row-major ones (up 0.951-0.988x), so
    // GEMMOPS_STSM_M_MAJOR takes it for the M-major boxes only, GEMMOPS_STSM_STAGING for both. (For
    // both, the 2-CTA 128x256 TMA ring's SiLU kernel spills 8 bytes beside the warp-uniform consumer
    // index; also with four matrices an instruction, or with the addresses' inputs made opaque.)
#if defined(GEMMOPS_STSM_STAGING)
    constexpr bool kStmatrix = true;
#elif defined(GEMMOPS_STSM_M_MAJOR)
    constexpr bool kStmatrix = kMMajor;
#else
    constexpr bool kStmatrix = false;
#endif
    if constexpr (kStmatrix) {
      const int lane = t % 32, w = t / 32, i = lane % 8, m = (lane / 8) % 2;
      const ::cuda::std::uint32_t base = kMMajor ? dst_shared + i * 128 + (((2 * w + m) ^ i) << 4)
                                                 : dst_shared + (16 * w + 8 * m + i) * 128;
#pragma unroll
      for (int c = 0; c < 8; ++c) {
        const ::cuda::std::uint32_t addr =
            kMMajor ? base + c * 1024 : base + static_cast<::cuda::std::uint32_t>((c ^ i) << 4);
        ptx::stmatrix_x2<kMMajor>(addr, pair_at(block0 + c, 0), pair_at(block0 + c, 1));
      }
    } else {
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
  /// params.map_second_out, h's ragged view with a fourth dimension for the halves
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
              ptx::tma_store_4d(&p.map_second_out, dst, h_col0 + 64 * (box % kHalfBoxes), rows.row, rows.end,
                                box / kHalfBoxes);
            });
    }
  }

  /// Loads a chunk's h boxes (64 rows from slab_row, product columns from c0) by TMA into the places
  /// dh takes in the staging ring, once the last chunk's stores have read them, completing on h_bar
  /// (one thread; KernelConfig::loads_h_by_tma). Concatenated gate and up at c0 and n + c0 (a gate
  /// box running past I reads up columns no lane uses); interleaved the chunk's 128 columns from
  /// 2 c0; plain at c0. Rows past the tensor read zeros.
  template <EpilogueOp kOp>
  __device__ __forceinline__ static void load_h_chunk(::cuda::std::uint8_t* staging, ::cuda::std::uint64_t* h_bar,
                                                      const GroupedGemmParams& p, int c0, int slab_row) {
    constexpr bool kGated = kOp.gated_act();
    constexpr bool kInterleaved = kGated && kOp.gate == Gate::interleaved;
    constexpr int kHBoxes = kOp.boxes_per_chunk() - 1;
    ptx::tma_store_wait_read<0>();
    ptx::mbarrier_arrive_expect_tx(h_bar, kHBoxes * kBoxBytes);
#pragma unroll
    for (int i = 0; i < kHBoxes; ++i)
      ptx::tma_load_2d(staging + i * kBoxBytes, &p.map_h,
                       kInterleaved ? 2 * c0 + 64 * i : (kGated && i == 1 ? p.scheduler.n + c0 : c0), slab_row, h_bar);
  }

  /// The activation's backward (EpilogueOp::activation_grad; epilogue_outputs.cuh has the math and
  /// the direct store's twin), per 64-row slab and 64 product columns (a chunk): thread 0 loads the
  /// chunk's h boxes by TMA (params.map_h, on the warpgroup's mbarrier, TileContext::h_bar) into the
  /// places dh will take in the staging ring, once the last chunk's stores have read them; each
  /// thread reads its own h words there, writes its dh words over them and s act(h) into the last
  /// box (kOp.boxes_per_chunk() boxes a chunk); the boxes are stored by TMA through out's ragged map
  /// (4D, launch_grouped.cpp: concatenated gated dh as two planes I columns apart, clipped at I;
  /// interleaved dh 2I columns wide, a chunk's 128 dh columns in two boxes) and through
  /// params.map_second_out (s act(h)'s ragged view); rows past the group's end are clipped there.
  /// The per-64-column partials of dA act(h) are written per row by the quad's lane 0, as in the
  /// direct store. The zero tail's rows use no h and store zeros. (The direct store reads h with 16
  /// round trips a row pair of a 128-wide tile and stores three outputs 4 bytes a thread.) A trial
  /// (Sm90EpilogueSupport::trial_activation_grad). Its first form, h read per thread from global
  /// memory, passed the GPU suite (H100, 2026-12-07) and spilled 8-48 bytes; this one is spill-free
  /// (the compile tests) and has not run on a GPU.
  template <EpilogueOp kOp, int kTileN, int kAtoms, int kRing, int kLen>
  __device__ __forceinline__ static void store_activation_grad(const float (&acc)[kAtoms][kLen], const TileContext& t,
                                                               ::cuda::std::uint8_t* staging, int& ring_pos,
                                                               const GroupedGemmParams& p) {
    static_assert(kOp.activation_grad && kOp.act != Act::none && !kOp.bias && !kOp.split_b(),
                  "the backward of an activation, over a plain product");
    static_assert(kTileN % 64 == 0, "a tile covers whole 64-column chunks");
    using namespace epilogue_outputs;
    using ::cuda::std::uint32_t;
    constexpr bool kGated = kOp.gated_act();
    constexpr bool kInterleaved = kGated && kOp.gate == Gate::interleaved;
    constexpr int kChunkBoxes = kOp.boxes_per_chunk();
    constexpr int kHBoxes = kChunkBoxes - 1;  // h's boxes of a chunk: dh's, which take their place
    static_assert(kRing >= kChunkBoxes, "the ring holds a chunk's boxes (KernelConfig::epilogue_ring)");
    static_assert(kOut != ElemType::fp32, "16-bit h and outputs");
    constexpr int kHW = kHWords<kOut, kGated>;
    // Blocks whose h words are read from shared memory together: 2 is spill-free on every serving
    // design (4 spilled 16 bytes on the gathered 128x128 TMA ping-pong, 8 spilled 68).
    constexpr int kBatch = 2;
    const int tid = threadIdx.x % 128, q = tid % 4;
    const int r_in = (tid / 32) * 16 + (tid % 32) / 4;  // the thread's row in the slab (and r_in + 8)
    const int n = p.scheduler.n;
    const int barrier = warpgroup_barrier(t.consumer);
    const int rows_readable = t.tail ? 0 : t.row_end - t.row0 - r_in;  // slab rows 64 a + 8 h below it have h
    const auto staging_shared = static_cast<uint32_t>(__cvta_generic_to_shared(staging));
    auto box = [&](int i) { return staging_shared + i * kBoxBytes; };
    // ring_pos holds the parity of the warpgroup's h loads here (the chunk's boxes are the ring's
    // first kChunkBoxes, reused chunk after chunk: every design's ring holds one chunk).
    uint32_t phase = static_cast<uint32_t>(ring_pos);
#if defined(GEMMOPS_ROW_SCALES_AHEAD)
    // The rows' scales, all in flight at once before the first chunk (an A/B define): read per
    // chunk, after its h wait, each chunk waits again on an L2 round trip for the same values
    // (the 128x128 ping-pong's SASS: the load after the try-wait, its use ~80 instructions on).
    float row_scales[kAtoms][2];
#pragma unroll
    for (int a = 0; a < kAtoms; ++a)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const bool readable = a < t.live_atoms && 64 * a + 8 * h < rows_readable;
        row_scales[a][h] = readable ? 1.0f : 0.0f;
        if constexpr (kOp.row_scale)
          row_scales[a][h] = readable ? __ldg(p.op.row_scale + t.row0 + 64 * a + r_in + 8 * h) : 0.0f;
      }
#endif
#pragma unroll
    for (int a = 0; a < kAtoms; ++a) {
      if (a >= t.live_atoms) break;
      const int slab_row = t.row0 + 64 * a;
#pragma unroll
      for (int b = 0; b < kTileN / 64; ++b) {
        const int c0 = t.col0 + 64 * b;         // the chunk's first product column
        const int cols_left = n - c0 - 2 * q;  // block j's columns lie inside when 8 j < cols_left
        // The tile's first chunk of h was loaded under its main loop (grouped_gemm.cuh's consume).
        if ((a != 0 || b != 0) && tid == 0) load_h_chunk<kOp>(staging, t.h_bar, p, c0, slab_row);
        ptx::mbarrier_wait(t.h_bar, phase);
        phase ^= 1u;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int rr = r_in + 8 * h;  // row in the slab
          const int r = slab_row + rr;
          const bool readable = 64 * a + 8 * h < rows_readable;
#if defined(GEMMOPS_ROW_SCALES_AHEAD)
          const float s = row_scales[a][h];
#else
          float s = readable ? 1.0f : 0.0f;
          if constexpr (kOp.row_scale) s = readable ? __ldg(p.op.row_scale + r) : 0.0f;
#endif
          float partial = 0.0f;
          // The 128-byte swizzle of TMA's boxes: 16-byte chunk c of row rr sits at chunk c ^ (rr % 8);
          // a pair's offset in its box, and an interleaved chunk's quad (dh columns 16 j + 4 q .. + 3
          // of its 128, in box j / 4).
          auto pair_offset = [&](int j) { return static_cast<uint32_t>(rr * 128 + ((j ^ (rr & 7)) * 16) + q * 4); };
          auto quad_offset = [&](int j) {
            return static_cast<uint32_t>(rr * 128 + (((2 * (j % 4) + q / 2) ^ (rr & 7)) * 16) + (q % 2) * 8);
          };
#pragma unroll
          for (int j0 = 0; j0 < 8; j0 += kBatch) {
            // kBatch blocks' h words first (each thread reads and then overwrites only its own).
            uint32_t words[kBatch][kHW];
#pragma unroll
            for (int jj = 0; jj < kBatch; ++jj) {
              const int j = j0 + jj;
              if constexpr (kInterleaved) {
                ptx::ld_shared_v2_u32(box(j / 4) + quad_offset(j), words[jj][0], words[jj][1]);
              } else {
                words[jj][0] = ptx::ld_shared_u32(box(0) + pair_offset(j));
                if constexpr (kGated) words[jj][1] = ptx::ld_shared_u32(box(1) + pair_offset(j));
              }
            }
#pragma unroll
            for (int jj = 0; jj < kBatch; ++jj) {
              const int j = j0 + jj;  // the chunk's 8-column block
              float gate[2] = {0.0f, 0.0f}, up[2] = {0.0f, 0.0f};
              if (readable && 8 * j < cols_left) decode_h_words<kOut, kGated, kInterleaved>(words[jj], gate, up);
              PairGrad g;
              pair_grad<kOp>([&](int e) { return t.no_k ? 0.0f : acc[a][4 * (8 * b + j) + 2 * h + e]; }, gate, up, s,
                             p.op, g, partial);
              // dh in h's places (each thread writes what it read), s act(h) into the last box.
              if constexpr (kInterleaved) {
                ptx::st_shared_v2_u32(box(j / 4) + quad_offset(j), pack(g.dh_gate[0], g.dh_up[0]),
                                      pack(g.dh_gate[1], g.dh_up[1]));
              } else {
                ptx::st_shared_u32(box(0) + pair_offset(j), pack(g.dh_gate[0], g.dh_gate[1]));
                if constexpr (kGated) ptx::st_shared_u32(box(1) + pair_offset(j), pack(g.dh_up[0], g.dh_up[1]));
              }
              ptx::st_shared_u32(box(kChunkBoxes - 1) + pair_offset(j), pack(g.scaled[0], g.scaled[1]));
            }
          }
          // The quad holds the row's 64 columns: lanes q ^ 1 and q ^ 2 add theirs, in an order every
          // lane shares (deterministic).
          partial += __shfl_xor_sync(0xffffffffu, partial, 1);
          partial += __shfl_xor_sync(0xffffffffu, partial, 2);
          const int chunk = c0 / 64;
          if (q == 0 && r < t.row_end && 64 * chunk < n)
            p.op.score_grad_partials[static_cast<long long>(r) * p.op.score_grad_row_stride + chunk] = partial;
        }
        ptx::fence_proxy_async_shared();
        ptx::named_barrier_sync(barrier, 128);
        if (tid == 0) {
          const RaggedRows rows = ragged_rows(slab_row, t.row_end);
          // dh: concatenated gate and up as planes 0 and 1 at c0; interleaved, its 128 columns from 2 c0.
#pragma unroll
          for (int i = 0; i < kHBoxes; ++i) {
            ptx::tma_store_4d(&p.store.map_out, staging + i * kBoxBytes, kInterleaved ? 2 * c0 + 64 * i : c0,
                              rows.row, rows.end, kInterleaved ? 0 : i);
            ptx::tma_store_commit();
          }
          ptx::tma_store_4d(&p.map_second_out, staging + kHBoxes * kBoxBytes, c0, rows.row, rows.end, 0);
          ptx::tma_store_commit();
        }
      }
    }
    ring_pos = static_cast<int>(phase);
  }

  /// Before the CTA exits: the last stores must be complete.
  __device__ __forceinline__ static void finish() {
    if (threadIdx.x % 128 == 0) ptx::tma_store_wait_all();
  }
};

}  // namespace gemmops::kernels::sm90
