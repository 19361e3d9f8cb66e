// src/simt/launch_plan.cpp: strides per form, 32-bit limits and the grid of the SIMT kernel
// SPDX-License-Identifier: Apache-2.0
#include "simt/launch_plan.hpp"

#include <algorithm>
#include <string>

namespace gemmops::simt {
namespace {

namespace k = kernels::simt;

// Rows, columns and K are 32-bit in the kernel, with room for a tile past the last one.
constexpr int64_t kMaxExtent = 2147483647 - 2 * std::max({k::kTileM, k::kTileN, k::kTileK});
constexpr int64_t kMaxBlocks = 2147483647;  // gridDim.x

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

k::Form form_of(OperationKind kind) {
  switch (kind) {
    case OperationKind::gemm:
    case OperationKind::batched_gemm: return k::Form::dense;
    case OperationKind::grouped_m: return k::Form::grouped_m;
    case OperationKind::grouped_k: return k::Form::grouped_k;
    case OperationKind::grouped_n: return k::Form::grouped_n;
    case OperationKind::grouped_m_masked: return k::Form::grouped_m_masked;
  }
  return k::Form::dense;
}

Result<LaunchPlan> plan_launch(const Arguments& args) {
  GEMMOPS_ASSIGN_OR_RETURN(ProblemShape shape, problem_shape(args));
  const TensorDesc &A = operand_a(args), &B = operand_b(args), &out = operand_out(args);
  LaunchPlan plan;
  plan.form = form_of(shape.kind);
  k::SimtParams& p = plan.params;
  p.a = A.data;
  p.b = B.data;
  p.out = out.data;
  // Every operand is a matrix in its last two dimensions; a leading dimension steps per group.
  p.a_row = A.stride(-2), p.a_k = A.stride(-1), p.a_group = A.rank() == 3 ? A.strides[0] : 0;
  p.b_k = B.stride(-2), p.b_col = B.stride(-1), p.b_group = B.rank() == 3 ? B.strides[0] : 0;
  p.out_row = out.stride(-2), p.out_col = out.stride(-1), p.out_group = out.rank() == 3 ? out.strides[0] : 0;
  const int64_t rows = out.size(-2), cols = out.size(-1);
  bool zero_tail = false;
  p.group_alignment = 1;
  if (const auto* g = std::get_if<GroupedGemmArguments>(&args)) {
    p.offsets = static_cast<const int32_t*>(g->offsets.data);
    // K-grouped writes every element anyway; the masked form has no tail (validate() refuses it).
    zero_tail = g->zero_tail && (shape.kind == OperationKind::grouped_m || shape.kind == OperationKind::grouped_n);
    if (shape.kind == OperationKind::grouped_m) p.group_alignment = g->group_alignment;  // a power of two
  }
  for (auto [what, v] : {std::pair{"rows", rows}, std::pair{"columns", cols}, std::pair{"K", shape.k},
                         std::pair{"groups", shape.groups}}) {
    if (v > kMaxExtent)
      return unsupported("out: simt kernels index " + std::string(what) + " with 32-bit integers (at most " +
                         std::to_string(kMaxExtent) + "); got " + std::to_string(v));
  }
  p.groups = static_cast<int32_t>(shape.groups);
  p.m = static_cast<int32_t>(rows);
  p.n = static_cast<int32_t>(cols);
  p.k = static_cast<int32_t>(shape.k);
  p.zero_tail = zero_tail ? 1 : 0;
  const int64_t tiles_n = ceil_div(cols, k::kTileN), tiles = ceil_div(rows, k::kTileM) * tiles_n;
  if (tiles > kMaxBlocks)
    return unsupported("out: simt kernels launch one block per 64 x 64 tile, at most " + std::to_string(kMaxBlocks) +
                       "; got " + std::to_string(tiles));
  p.tiles_n = static_cast<int32_t>(tiles_n);
  // Dense, K-grouped and masked blocks loop over groups along y; M- and N-grouped ones find theirs.
  const bool groups_on_y =
      plan.form == k::Form::dense || plan.form == k::Form::grouped_k || plan.form == k::Form::grouped_m_masked;
  plan.grid_x = static_cast<unsigned>(tiles);
  plan.grid_y = groups_on_y ? static_cast<unsigned>(std::min<int64_t>(shape.groups, k::kMaxGridY)) : 1;
  plan.launch = tiles > 0 && (groups_on_y ? shape.groups > 0 : shape.groups > 0 || zero_tail);
  return plan;
}

}  // namespace gemmops::simt
