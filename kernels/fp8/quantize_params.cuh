// kernels/fp8/quantize_params.cuh: the parameters of the fp8 quantisation kernels, shared verbatim by
// the host side (src/fp8) and the device code. Plain C++: no CUDA header.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "common/fixed_width_ints.cuh"

namespace gemmops::kernels::fp8 {

/// The input element type.
enum class Elem : int { bf16 = 0, fp32 };

/// What one launch quantises: x (instances, rows, cols) into e4m3 q of x's shape, one fp32 scale per
/// block (include/gemmops/scaling.hpp). Work is cut into tiles of (tile rows) x (128 columns, or all
/// columns for row scales), numbered instance-major, then row tile, then column tile.
struct QuantizeParams {
  const void* x;
  unsigned char* q;
  float* scales;
  int64_t x_strides[3];  // elements: instance, row, column
  int64_t q_strides[3];
  // Elements from `scales` of the scale of (instance, row or 128-row block, 128-column block); 0 for
  // a dimension the granularity does not have (tensor: only the instance; row: no column block).
  int64_t s_strides[3];
  int64_t instances, rows, cols;
  int64_t row_tiles, col_tiles;  // per instance
  int64_t tiles;                 // instances * row_tiles * col_tiles
};

/// Threads of a block: 16 rows of 16 threads, each thread 8 consecutive columns (a segment).
inline constexpr int kThreads = 256;
inline constexpr int kThreadsPerRow = 16;
inline constexpr int kSegment = 8;
inline constexpr int kRowsPerPass = kThreads / kThreadsPerRow;
/// Rows of a tile: block_1x128 tiles hold 64 rows (4 passes of 16, each row its own scale),
/// block_128x128 and tensor tiles 128 (8 passes, one amax per tile); row tiles are one pass of 16
/// rows over all columns (kRowsPerPass).
inline constexpr int kRowTileRows = 64;
inline constexpr int kBlockTileRows = 128;
inline constexpr int kBlockCols = 128;

}  // namespace gemmops::kernels::fp8
