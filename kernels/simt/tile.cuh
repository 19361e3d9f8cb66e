// kernels/simt/tile.cuh: one block computes the valid part of one kTileM x kTileN tile of out for one
// group, through shared memory, with plain fp32 FMA (no tensor cores: torch's fp32 reference is full
// fp32). Any strides: each operand is read in the order its contiguous dimension favours.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "simt/elements.cuh"
#include "simt/params.cuh"

namespace gemmops::kernels::simt {

/// The part of a tile one group owns: rows [row_begin, row_end) and columns [col_begin, col_end)
/// of the tile whose first row and column are row0 and col0, summed over K [k_begin, k_end). An
/// empty K range writes zeros.
struct TileRange {
  int row0, row_begin, row_end;
  int col0, col_begin, col_end;
  int k_begin, k_end;
};

/// One K slice of the A tile and of the B tile, as fp32. Rows are padded by 4 floats: 16-byte
/// aligned for the float4 reads (so is the struct: a shared float array alone is 4-byte aligned),
/// and K-contiguous stores spread over more banks.
struct alignas(16) TileStorage {
  float a[kTileK][kTileM + 4];  // (K slice, rows)
  float b[kTileK][kTileN + 4];  // (K slice, columns)
};

/// Thread t computes rows row0 + 4 * (t / 16) + i and columns col0 + 4 * (t % 16) + j, i, j < 4.
inline constexpr int kThreadsPerRow = kTileN / 4;
static_assert(kThreads == (kTileM / 4) * (kTileN / 4), "one 4 x 4 block of out per thread");
static_assert(kTileM * kTileK == 4 * kThreads && kTileN * kTileK == 4 * kThreads, "4 loads per thread");
static_assert(kThreads % kTileK == 0 && kThreads % kTileM == 0 && kThreads % kTileN == 0, "whole lines per step");

// ---------------------------------------------------------------- loads
/// A thread's 4 elements of each K slice of one operand's tile (kLines lines, rows of A or columns
/// of B, by kTileK). Consecutive threads take consecutive addresses along the operand's contiguous
/// dimension: with K contiguous a thread's elements share their k and step 16 lines, otherwise
/// they share their line and step 4 k. The lines' offsets are computed once per tile.
template <Elem kElem, int kLines>
struct SliceLoader {
  int64_t line_offset[4];  // element offset of each element's line, or -1 outside the group's range
  int64_t k_stride;
  int first_kk, kk_step;   // element i sits at k first_kk + i * kk_step of the slice
  int first_slot, slot_step;  // and at float first_slot + i * slot_step of the slice's storage

  __device__ SliceLoader(int64_t base, int64_t line_stride, int64_t k_stride_, bool k_contiguous, int first_line,
                         int line_begin, int line_end)
      : k_stride(k_stride_) {
    constexpr int kRow = kLines + 4;  // floats per K row of the storage
    const int t = static_cast<int>(threadIdx.x);
    const int line0 = k_contiguous ? t / kTileK : t % kLines, line_step = k_contiguous ? kThreads / kTileK : 0;
    first_kk = k_contiguous ? t % kTileK : t / kLines;
    kk_step = k_contiguous ? 0 : kThreads / kLines;
    first_slot = first_kk * kRow + line0;
    slot_step = kk_step * kRow + line_step;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int l = first_line + line0 + i * line_step;
      line_offset[i] = l >= line_begin && l < line_end ? base + l * line_stride : -1;
    }
  }

  /// Slice [k0, k0 + kTileK) into `dst` (kTileK x (kLines + 4) floats); K at or past k_end reads
  /// as zero, as do lines outside the range.
  __device__ __forceinline__ void load(const void* data, int k0, int k_end, float* dst) const {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int k = k0 + first_kk + i * kk_step;
      float v = 0.0f;
      if (line_offset[i] >= 0 && k < k_end) v = load_element<kElem>(data, line_offset[i] + k * k_stride);
      dst[first_slot + i * slot_step] = v;
    }
  }
};

// ---------------------------------------------------------------- stores
template <Elem kOut>
__device__ __forceinline__ void store_tile(const SimtParams& p, int64_t out_base, const TileRange& t,
                                           const float (&acc)[4][4]) {
  const int r0 = t.row0 + 4 * (static_cast<int>(threadIdx.x) / kThreadsPerRow);
  const int c0 = t.col0 + 4 * (static_cast<int>(threadIdx.x) % kThreadsPerRow);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = r0 + i;
    if (row < t.row_begin || row >= t.row_end) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int col = c0 + j;
      if (col >= t.col_begin && col < t.col_end)
        store_element<kOut>(p.out, out_base + row * p.out_row + col * p.out_col, acc[i][j]);
    }
  }
}

// ---------------------------------------------------------------- the tile
/// out[g][rows][cols] = A[g][rows][K range] x B[g][K range][cols]. Every thread of the block calls
/// it with the same arguments (it synchronises).
template <Elem kAB, Elem kOut>
__device__ void compute_tile(const SimtParams& p, int g, const TileRange& t, TileStorage& s) {
  const SliceLoader<kAB, kTileM> a_slices(g * p.a_group, p.a_row, p.a_k, p.a_k == 1, t.row0, t.row_begin,
                                          t.row_end);
  const SliceLoader<kAB, kTileN> b_slices(g * p.b_group, p.b_col, p.b_k, p.b_k == 1 && p.b_col != 1, t.col0,
                                          t.col_begin, t.col_end);
  const int ty = static_cast<int>(threadIdx.x) / kThreadsPerRow, tx = static_cast<int>(threadIdx.x) % kThreadsPerRow;
  float acc[4][4] = {};  // (4 rows, 4 columns) of out
  for (int k0 = t.k_begin; k0 < t.k_end; k0 += kTileK) {
    a_slices.load(p.a, k0, t.k_end, &s.a[0][0]);
    b_slices.load(p.b, k0, t.k_end, &s.b[0][0]);
    __syncthreads();
    // Unrolled by 4, not 16: fully unrolled, ptxas hoists the shared loads past the 128 registers
    // two blocks per SM allow, and spills.
#pragma unroll 4
    for (int kk = 0; kk < kTileK; ++kk) {
      const float4 a4 = *reinterpret_cast<const float4*>(&s.a[kk][4 * ty]);
      const float4 b4 = *reinterpret_cast<const float4*>(&s.b[kk][4 * tx]);
      const float av[4] = {a4.x, a4.y, a4.z, a4.w}, bv[4] = {b4.x, b4.y, b4.z, b4.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();  // the slices are reloaded next
  }
  store_tile<kOut>(p, g * p.out_group, t, acc);
}

/// Zeros in the part of a tile `t` names (its K range is ignored).
template <Elem kOut>
__device__ void zero_tile(const SimtParams& p, const TileRange& t) {
  const float zeros[4][4] = {};
  store_tile<kOut>(p, 0, t, zeros);
}

}  // namespace gemmops::kernels::simt
