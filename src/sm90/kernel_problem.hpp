// src/sm90/kernel_problem.hpp: how valid arguments map onto the one grouped kernel (rows split into
// groups, B as a (G, K, N) tensor), and the rules that mapping needs
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>

#include "gemmops/arguments.hpp"

namespace gemmops::sm90 {

/// Dense GEMM is one group, batched GEMM L groups of M rows, grouped_m G groups from the offsets.
struct KernelProblem {
  OperationKind kind = OperationKind::grouped_m;
  const TensorDesc* a = nullptr;
  const TensorDesc* b = nullptr;
  const TensorDesc* out = nullptr;
  const int32_t* offsets = nullptr;  // device offsets, or nullptr for uniform groups
  int64_t groups = 1, rows = 0, rows_per_group = 0, n = 0, k = 0;
  int64_t a_row_stride = 0;    // elements between rows of A (K-major: K contiguous)
  int64_t out_row_stride = 0;  // elements between rows of out (N contiguous)
  Major b_major = Major::k;
  int64_t b_group_stride = 0, b_k_stride = 0, b_n_stride = 0;  // elements
};

/// Maps valid `args`; unsupported when the kernel cannot serve them (A not K-major, B neither K-
/// nor N-major, out not row-major, batched operands whose rows do not stack, the K-grouped form).
Result<KernelProblem> map_problem(const Arguments& args);

}  // namespace gemmops::sm90
