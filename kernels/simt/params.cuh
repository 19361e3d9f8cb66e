// kernels/simt/params.cuh: the parameters of the portable SIMT GEMM kernels, shared verbatim by the
// host side (src/simt) and the device code, so both see one layout. Plain C++: no CUDA header.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "common/fixed_width_ints.cuh"

namespace gemmops::kernels::simt {

/// Element types of A and B (one for both) and of out.
enum class Elem : int { bf16 = 0, fp16 = 1, fp32 = 2 };

/// What the offsets split. `dense` is gemm (one group) and batched gemm (one group per batch);
/// `grouped_m_masked` is batched gemm whose group g computes only its first offsets[g] rows.
enum class Form : int { dense = 0, grouped_m = 1, grouped_k = 2, grouped_n = 3, grouped_m_masked = 4 };

/// A block computes one kTileM x kTileN tile of out with kThreads threads, 4 x 4 elements each,
/// stepping through K kTileK at a time.
inline constexpr int kTileM = 64;
inline constexpr int kTileN = 64;
inline constexpr int kTileK = 16;
inline constexpr int kThreads = 256;
/// gridDim.y's limit: the groups of the dense and K-grouped forms beyond it are looped over.
inline constexpr int kMaxGridY = 65535;

/// Everything the kernels read at run time; one compiled kernel serves every size and layout.
/// Group g's matrices start g * *_group elements past the base pointer: A, B and out of a batched
/// gemm and of the masked form, B of the M-grouped form, out of the K-grouped form and A of the
/// N-grouped form step; the other group strides are 0.
struct SimtParams {
  const void* a;
  const void* b;
  void* out;
  const int32_t* offsets;      // (groups,) exclusive ends (masked: row counts) on the device; nullptr for dense
  int64_t a_group, a_row, a_k;     // strides of A in elements: group, row (M), K
  int64_t b_group, b_k, b_col;     // of B: group, K, column (N)
  int64_t out_group, out_row, out_col;
  int32_t groups;              // G, L for batched, 1 for gemm
  int32_t m;                   // rows of out per group (M-grouped: TotalM, the bound of the offsets;
                               // masked: MaxM, the bound of the counts)
  int32_t n;                   // columns of out (N-grouped: TotalN, the bound of the offsets)
  int32_t k;                   // K (K-grouped: TotalK, the bound of the offsets)
  int32_t tiles_n;             // (n + kTileN - 1) / kTileN: blockIdx.x = tile row * tiles_n + tile column
  int32_t zero_tail;           // M-/N-grouped: write zeros to the rows/columns past the last group
  int32_t group_alignment;     // M-grouped: groups start at the previous end rounded up to it (a
                               // power of two; 1 elsewhere: back to back)
};

}  // namespace gemmops::kernels::simt
