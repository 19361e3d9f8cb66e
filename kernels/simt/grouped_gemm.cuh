// kernels/simt/grouped_gemm.cuh: the portable grouped GEMM, one kernel per form, for any NVIDIA GPU
// of compute capability 8.0 or later. Block (x, y) computes tile x of out for the groups it owns:
// dense, K-grouped and masked, groups y, y + gridDim.y, ... (masked: only the tile's rows below the
// group's count); M- and N-grouped, every group whose rows (columns) meet the tile, found from the
// offsets on the device (M-grouped: contiguous or aligned groups). Correct for every dtype, stride
// and group size; the sm90 kernels are the fast path (speed is secondary here).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "simt/group_ranges.cuh"
#include "simt/params.cuh"
#include "simt/tile.cuh"

namespace gemmops::kernels::simt {

// Two blocks per SM: at most 128 registers a thread, which the tile needs without spilling.
template <Form kForm, Elem kAB, Elem kOut>
__global__ void __launch_bounds__(kThreads, 2) simt_gemm_kernel(const SimtParams p) {
  __shared__ TileStorage storage;
  __shared__ int staged[kThreads];  // offsets of a block of groups, or block_max's scratch
  const int tile_row = static_cast<int>(blockIdx.x) / p.tiles_n, tile_col = static_cast<int>(blockIdx.x) % p.tiles_n;
  const int row0 = tile_row * kTileM, col0 = tile_col * kTileN;
  const int row_end = min(p.m - row0, kTileM) + row0, col_end = min(p.n - col0, kTileN) + col0;

  if constexpr (kForm == Form::dense || kForm == Form::grouped_k || kForm == Form::grouped_m_masked) {
    for (int g = static_cast<int>(blockIdx.y); g < p.groups; g += static_cast<int>(gridDim.y)) {
      int k_begin = 0, k_end = p.k, rows_end = row_end;
      if constexpr (kForm == Form::grouped_k) group_range(p.offsets, g, p.k, staged, &k_begin, &k_end);
      if constexpr (kForm == Form::grouped_m_masked) {
        // Rows [0, count) of the group's MaxM, the count clamped to [0, MaxM]; the rest untouched.
        rows_end = min(row_end, clamp_end(p.offsets[g], p.m));
        if (rows_end <= row0) continue;  // the same for every thread of the block
      }
      compute_tile<kAB, kOut>(p, g, {row0, row0, rows_end, col0, col0, col_end, k_begin, k_end}, storage);
    }
  } else if constexpr (kForm == Form::grouped_m) {
    // ---------------------------------------------------------------- rows split into groups
    auto visit = [&](int g, int begin, int end) {
      compute_tile<kAB, kOut>(p, g, {row0, begin, end, col0, col0, col_end, 0, p.k}, storage);
    };
    // Aligned groups take their own walk (uniform across the grid), so contiguous ones keep theirs.
    __shared__ int scratch[kThreads / 32];  // block_max's, while staged holds offsets
    const int tail = p.group_alignment > 1
                         ? walk_aligned_groups(p.offsets, p.groups, p.m, p.group_alignment, row0, row_end, staged,
                                               scratch, visit)
                         : walk_groups(p.offsets, p.groups, p.m, row0, row_end, staged, visit);
    if (p.zero_tail != 0 && tail < row_end) zero_tile<kOut>(p, {row0, tail, row_end, col0, col0, col_end, 0, 0});
  } else {
    // ---------------------------------------------------------------- columns split into groups
    const int tail = walk_groups(p.offsets, p.groups, p.n, col0, col_end, staged, [&](int g, int begin, int end) {
      compute_tile<kAB, kOut>(p, g, {row0, row0, row_end, col0, begin, end, 0, p.k}, storage);
    });
    if (p.zero_tail != 0 && tail < col_end) zero_tile<kOut>(p, {row0, row0, row_end, col0, tail, col_end, 0, 0});
  }
}

}  // namespace gemmops::kernels::simt
