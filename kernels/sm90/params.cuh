// kernels/sm90/params.cuh: the runtime parameters of the grouped GEMM kernel, nested per part of the
// kernel (main loop, store, scheduler, split-K, epilogue op), shared verbatim by the
// host side (src/sm90) and the device code, so both see one layout. Plain C++: no CUDA header.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "common/fixed_width_ints.cuh"

namespace gemmops::kernels::sm90 {

/// Opaque 128-byte TMA descriptor (CUtensorMap); filled on the host by cuTensorMapEncodeTiled.
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};

/// The main loop's operands: the producer's TMA descriptors (the K range of each tile comes from
/// the scheduler), and for a gathered operand (KernelConfig::gather_a / gather_b, no map) its
/// source rows and their index.
struct MainloopParams {
  TensorMap map_a;  // A (rows, K): K-major dims {K, rows}; M-major dims {rows, K}
  TensorMap map_b;  // B: K-major dims {K, N, G}; N-major dims {N, K, G} (G = 1 if K-grouped)
  // Gathered A. M-grouped: (A rows, K), K contiguous; row r of the product reads source row
  // a_row_index[r]. K-grouped: the source (Rows, M), M contiguous (A given M-major); k-row k of the
  // product's A is source row a_row_index[k]. Rows 16-byte aligned.
  const void* a;
  int64_t a_row_stride;         // elements between the source's rows
  const int32_t* a_row_index;
  // Gathered B (K-grouped): the source (Rows, N), N contiguous; k-row k of the product's B is
  // source row b_row_index[k]. Rows 16-byte aligned.
  const void* b;
  int64_t b_row_stride;
  const int32_t* b_row_index;
};

/// Where a tile leaves to: out (out rows, N), N contiguous.
struct StoreParams {
  // Used by the TMA store only. K-grouped M-major out: dims {M, N, G}. Otherwise out's ragged view
  // (the trick of QuACK's and Triton's ragged TMA): dims {N, 64, out rows + 1}, both row dims of
  // out's row stride, based 64 rows before out. A box at (c, 64 - (e - r), e), r < e <= r + 64,
  // covers out's rows r .. r + 63 and is clipped from row e on (its second coordinate reaches 64
  // there), so a slab straddling a group's end e writes none of the next group's rows.
  TensorMap map_out;
  void* out;
  int64_t out_row_stride;  // elements
};

/// What the tile scheduler reads (tile_scheduler.cuh), and nothing else does but for the shape (n).
/// M-grouped (GroupAxis::m): rows of A and out are split into `groups` consecutive ranges. With
/// `offsets` (device int32, exclusive end rows) the ranges are read on the device; without
/// (nullptr), group g covers rows [g * rows_per_group, (g + 1) * rows_per_group) (dense, batched).
/// K-grouped (GroupAxis::k): `offsets` split K; A is (rows, K), B (K, N), and group g's result
/// (rows, N) sits at rows [g * rows, (g + 1) * rows) of out.
/// A launch may serve a chunk of the problem's groups (more groups than the shared-memory table
/// holds run as several launches): its `groups` groups are the problem's groups group_base ..,
/// `offsets` points at the chunk's first end, and the first group starts at *start_offset.
struct SchedulerParams {
  const int32_t* offsets;    // (groups,) or nullptr
  int32_t groups;
  int32_t rows;              // rows of A (M-grouped: TotalM; rows past the last group stay untouched
                             // unless table_groups says there is a zero tail)
  int32_t rows_per_group;    // used when offsets == nullptr
  int32_t n;
  int32_t k;                 // the scheduler gives each tile its K range (the main loop reads no k)
  int32_t raster_band;       // scheduler units of M walked together before moving along N (>= 1)
  int32_t k_walk_longest_first;  // K-grouped: 1 walks groups longest first in a snake, 0 in index order round-robin
  // Chunks of groups. B's group coordinate (M-grouped) and a result's place in out (K-grouped)
  // count from group_base; without offsets, group g of the chunk covers rows of group group_base + g.
  int32_t group_base;        // the problem's index of this launch's first group (0: the first chunk)
  const int32_t* start_offset;  // &offsets[group_base - 1]: where the first group starts (nullptr: at 0)
  // Entries of the scheduler table: `groups`, or groups + 1 with the zero tail (M-grouped, the last
  // chunk only): zeros stored to the rows at or past the last group's (clamped) end, as one more
  // scheduler group whose tiles have no k-blocks. One parameter, not groups + a flag: the table's
  // layout from a sum of two made ptxas keep its pointers in registers (a 64x256 ping-pong split-K
  // kernel spilled).
  int32_t table_groups;
  // The layouts of an expert-parallel dispatcher (M-grouped, tile_scheduler.cuh): group g starts at
  // the previous group's end rounded up to a multiple of `group_alignment` (1: right there), or,
  // `masked`, `offsets` hold row counts and group g covers rows [g * rows_per_group, that + count).
  int32_t group_alignment;
  int32_t masked;
};

/// Split-K (M-grouped only): each tile's K runs as `k_splits` consecutive units on different CTAs;
/// all but the last write fp32 partials, the last adds them and stores (sm90/split_k.cuh).
struct SplitKParams {
  int32_t k_splits;          // 1: no split
  float* partials;           // k_splits > 1: (slots, k_splits - 1, warpgroup rows * TILE_N) fp32
  int32_t* split_flags;      // k_splits > 1: (slots,) partials written so far, zeroed before the launch
};

/// The run-time values of the fused epilogue op (KernelConfig::op says which are read).
struct OpParams {
  const void* bias;           // (G, N) fp32 or out's 16-bit type, N = the product's columns
  int64_t bias_group_stride;  // elements between groups' bias rows (0: one row for all, dense)
  const float* row_scale;     // (rows,): indexed by the row of out (M-grouped: of A too)
  float alpha;                // swiglu_oss: the sigmoid's slope
  float limit;                // swiglu_oss: the clamp of gate (above) and up (both sides)
  // The second operands (EpilogueOp::pre_activation, ::activation_grad), rows of out's type but
  // the partials, each row `..._row_stride` elements after the previous, N contiguous.
  void* pre_activation;       // forward: v before the activation, written (rows, N); backward: h, read (rows, 2I)
  int64_t pre_activation_row_stride;
  void* scaled_activation;    // backward: s act(h), (rows, I)
  int64_t scaled_activation_row_stride;
  float* score_grad_partials;  // backward: (rows, ceil(I / 64)) fp32
  int64_t score_grad_row_stride;
};

/// The fp8 main loop's scales (sm90/mainloop_fp8.cuh), K-major: A's 1x128 scales (rows of A, KB),
/// B's 128x128 (G, ceil(N / 128), KB) with rows of exactly KB = ceil(K / 128). 24 bytes: it fills
/// the tail padding of GroupedGemmParams, so the other kernels' parameters stay as they were.
struct ScaleParams {
  const float* a;
  const float* b;
  int32_t a_row_stride;    // elements between A's rows of scales (>= KB)
  int32_t b_group_stride;  // elements between groups' scales (>= ceil(N / 128) * KB)
};

/// Everything the kernel reads at run time, one part per part of the kernel. One compiled kernel
/// serves every problem size.
struct GroupedGemmParams {
  MainloopParams mainloop;
  StoreParams store;
  SchedulerParams scheduler;
  SplitKParams split_k;      // read only by the split-K twin (KernelConfig::split_k)
  OpParams op;               // read only by kernels with a fused epilogue op (KernelConfig::op)
  ScaleParams scales;        // read only by the fp8 main loop (KernelConfig::ab == e4m3)
  // Read only by the TMA store of the epilogue's second output (epilogue_tma.cuh): the forward's h
  // (its ragged view with the halves as a fourth dimension) or the backward's s act(h) (one plane).
  // Last, so that every other field keeps its offset.
  TensorMap map_second_out;
  // Read only by the TMA store's activation backward (KernelConfig::loads_h_by_tma): h's 2D view
  // {h's columns, rows}, 64x64 boxes, 128-byte swizzle. After map_second_out, so that no field moves.
  TensorMap map_h;
};

}  // namespace gemmops::kernels::sm90
