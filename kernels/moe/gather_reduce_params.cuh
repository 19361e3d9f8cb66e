// kernels/moe/gather_reduce_params.cuh: the parameters of the gather-reduce kernel, shared verbatim by
// the host side (src/moe) and the device code. Plain C++: no CUDA header.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "common/fixed_width_ints.cuh"

namespace gemmops::kernels::moe {

/// What one launch sums: out[t] = sum over j < k of scores[t, j] * rows[pair[t, j]] (see moe.hpp).
struct GatherReduceParams {
  const void* rows;      // (rows_count, h), row stride row_stride elements, columns contiguous
  const int* pair;       // (tokens, k) contiguous: the row of each (token, choice)
  const float* scores;   // (tokens, k) contiguous, or null: every score is 1
  const int* row_limit;  // a device scalar, or null: rows at or past it hold nothing (sentinels)
  void* out;             // (tokens, h), row stride out_stride elements
  int64_t row_stride;
  int64_t out_stride;
  int rows_count;
  int tokens;
  int k;
  int h;
};

/// Threads of a block: one block per token, each thread kVec contiguous columns at a time.
inline constexpr int kThreads = 128;

}  // namespace gemmops::kernels::moe
