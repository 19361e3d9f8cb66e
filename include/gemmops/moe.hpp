// include/gemmops/moe.hpp: the MoE layer's combine step (gather-reduce): each token's k expert rows,
// weighted by its routing scores, summed in a fixed order
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>

#include "gemmops/operator.hpp"
#include "gemmops/status.hpp"
#include "gemmops/tensor.hpp"

namespace gemmops {

/// out[t, :] = sum over j = 0 .. k-1, in that order, of scores[t, j] * rows[pair_rows[t, j], :]
/// (a score of 1 without `scores`), each column summed in fp32 by one fused multiply-add per choice
/// and rounded once to out's dtype. The bits depend on the inputs only (no atomics, no launch-shape
/// dependence): the forward of a MoE layer (o[t] = sum of s x y over t's pairs) and its backward
/// (dx[t] = sum of the pairs' dx rows). A choice whose row is negative, at or past rows.size(0), or
/// at or past *row_limit adds nothing (expert-parallel sentinels: a token without rows gets zeros).
struct GatherReduceArguments {
  /// (S, H) bf16, fp16 or fp32; columns contiguous, any row stride.
  TensorDesc rows;
  /// (T, k) int32, contiguous, on rows' device: the row of each (token, choice).
  TensorDesc pair_rows;
  /// (T, k) fp32, contiguous, on rows' device; none: every score is 1.
  std::optional<TensorDesc> scores;
  /// One int32 element on rows' device, read by the kernel (no host synchronisation): rows at or
  /// past its value are not read, e.g. a grouped GEMM's offsets[G-1] past which its out holds no
  /// group's rows. None: every row of `rows` may be read.
  std::optional<TensorDesc> row_limit;
  /// (T, H) bf16, fp16 or fp32; columns contiguous, any row stride; must not overlap the inputs.
  TensorDesc out;
};

/// The rules of the arguments: dtypes, shapes, strides, devices and overlap, each failure naming the
/// operand and the rule (invalid_argument). Fake tensors pass (the shapes are checked).
Status validate(const GatherReduceArguments& args);

/// Computes out (see GatherReduceArguments). On the host when the tensors are on the host; on a
/// CUDA device (compute capability 8.0 or later) as one kernel launched on `stream`, compiled on
/// first use for the device's architecture, with no host synchronisation (CUDA-graph safe).
Status gather_reduce(const GatherReduceArguments& args, Stream stream = nullptr);

}  // namespace gemmops
