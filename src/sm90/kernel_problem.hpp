// src/sm90/kernel_problem.hpp: how valid arguments map onto the one grouped kernel (rows split into
// groups, B as a (G, K, N) tensor), and the rules that mapping needs
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>

#include "gemmops/arguments.hpp"

namespace gemmops::sm90 {

/// Dense GEMM is one group, batched GEMM L groups of M rows, grouped_m G groups from the offsets
/// (grouped_m_masked: G groups of MaxM rows, the first `count` of each);
/// grouped_k splits K by the offsets, and out holds its G (M, N) results stacked by rows.
struct KernelProblem {
  OperationKind kind = OperationKind::grouped_m;
  const TensorDesc* a = nullptr;
  const TensorDesc* b = nullptr;
  const TensorDesc* out = nullptr;
  const int32_t* offsets = nullptr;  // device offsets, or nullptr for uniform groups
  bool gather_a = false;             // grouped_m: A's rows read through a_row_index (rows: out's)
  const int32_t* a_row_index = nullptr;  // (rows,) device indices into A's rows; K-grouped: a_k_index
  bool gather_b = false;                 // grouped_k: B's k-rows read through b_k_index
  const int32_t* b_row_index = nullptr;  // (TotalK,) device indices into B's rows
  int64_t groups = 1, rows = 0, rows_per_group = 0, n = 0, k = 0;
  int64_t out_rows = 0;        // rows of out seen as one matrix (grouped_k: G * M, else rows)
  Major a_major = Major::k;    // k: K contiguous; mn: the rows (M) contiguous
  int64_t a_stride = 0;        // elements between rows of A (K-major) or between its K columns (M-major)
  int64_t out_row_stride = 0;  // elements between rows of out (N contiguous; out_m_major: between its N columns)
  // grouped_k: out (G, M, N) stored M-major (stride 1 along M: the transposed view of a (G, N, M)
  // tensor), by the TMA epilogue through a (M, N, G) map; out_group_stride elements between groups.
  bool out_m_major = false;
  int64_t out_group_stride = 0;
  Major b_major = Major::k;
  int64_t b_group_stride = 0, b_k_stride = 0, b_n_stride = 0;  // elements
  bool zero_tail = false;      // grouped_m: out's rows past the last group's end are set to zero
  int64_t group_alignment = 1;  // grouped_m: groups start at multiples of this (padding rows between)
  bool masked = false;         // grouped_m_masked: offsets are row counts, groups of rows_per_group rows
  // The fused epilogue op's run-time values (its kind is the kernel's, KernelConfig::op).
  const void* bias = nullptr;        // (G, N) / (N,) / (L, N), or nullptr
  int64_t bias_group_stride = 0;     // elements between groups' rows of the bias (0: one row)
  const float* row_scale = nullptr;  // (rows,), or nullptr
  float alpha = 1.702f, limit = 7.0f;
  // The second operands (OpParams): the pre-activation (forward output or backward input h), s act(h)
  // and the score-gradient partials, or nullptr; their row strides in elements.
  void* pre_activation = nullptr;
  int64_t pre_activation_row_stride = 0;
  void* scaled_activation = nullptr;
  int64_t scaled_activation_row_stride = 0;
  float* score_grad_partials = nullptr;
  int64_t score_grad_row_stride = 0;
  // Bytes the epilogue moves per element of the product when it has second operands (the estimate's
  // store cost): the forward's a and h (1.5 elements, gated), the backward's h read, dh and s act(h)
  // written (5, gated; 3 plain). 0: out's element size (every other epilogue, as before).
  double epilogue_bytes_per_element = 0;
  // The fp8 main loop's scales (ScaleParams; fp8_scales.hpp): A's 1x128 and B's 128x128, K-major.
  const float* a_scales = nullptr;
  const float* b_scales = nullptr;
  int64_t a_scale_row_stride = 0, b_scale_group_stride = 0;  // elements
};

/// The epilogue ops of `args` (both argument structs carry one).
const EpilogueOps& epilogue_ops(const Arguments& args);

/// Points `p` at the run-time values of `ops`: bias and row scale pointers, the bias's group
/// stride, alpha and limit, the second operands' pointers and row strides (what a call may change without changing the kernel).
void bind_epilogue(const EpilogueOps& ops, KernelProblem* p);

/// Maps valid `args`; unsupported when the kernel cannot serve them (A neither K- nor M-major, B
/// neither K- nor N-major, out not row-major, batched or K-grouped outputs whose rows do not stack).
Result<KernelProblem> map_problem(const Arguments& args);

}  // namespace gemmops::sm90
