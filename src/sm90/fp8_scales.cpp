// src/sm90/fp8_scales.cpp: the fp8 main loop's constraints, refusals and scale binding
// SPDX-License-Identifier: Apache-2.0
#include "sm90/fp8_scales.hpp"

#include <cstdint>
#include <limits>
#include <string>

namespace gemmops::sm90 {
namespace {

const GroupedGemmArguments* grouped(const Arguments& args) { return std::get_if<GroupedGemmArguments>(&args); }

bool fits_int32(int64_t v) { return v >= 0 && v <= std::numeric_limits<int32_t>::max(); }

}  // namespace

void set_fp8_constraints(OperandConstraints& c) {
  // The M-grouped form and the masked layout (an expert-parallel dispatcher's, DeepGEMM's masked
  // form): A's rows of group g are rows g * MaxM .. of the flattened (G * MaxM, K), so its scales
  // (G, MaxM, KB) are read as (G * MaxM, KB). The scheduler's aligned layout would work unchanged,
  // untested with the fp8 main loop so far.
  c.kinds = {OperationKind::grouped_m, OperationKind::grouped_m_masked};
  c.aligned_groups = false;
  c.a_row_index = false;
  c.a_k_index = c.b_k_index = false;
  c.a_dtypes = {DType::e4m3};
  c.b_dtypes = {DType::e4m3};
  c.out_dtypes = {DType::bf16};
  c.accumulator_dtypes = {DType::fp32};
  c.a_b_same_dtype = true;
  c.a_majors = {Major::k};  // 8-bit wgmma reads A and B K-major only
  c.b_majors = {Major::k};
  c.out_row_major = true;
  c.alignment_bytes = 16;
  c.device = Device::Kind::cuda;
  c.epilogue = EpilogueSupport{};  // no op yet: the store reads the promoted sum as it is
  // DeepGEMM's blocks, or torch's rowwise (a scale per row of A and per column of B: check_fp8_problem
  // takes the two pairs only).
  c.scalings.a = {ScaleGranularity::row, ScaleGranularity::block_1x128};
  c.scalings.b = {ScaleGranularity::row, ScaleGranularity::block_128x128};
  c.scalings.layouts = {ScaleLayout::k_major};
}

Status check_fp8_problem(const Arguments& args, const KernelProblem& p) {
  const GroupedGemmArguments* g = grouped(args);
  if (g == nullptr) return unsupported("A: the fp8 main loop serves the M-grouped form only");
  if (!g->a_scales)
    return unsupported("a_scales: the fp8 main loop needs A's block_1x128 or row scales (an unscaled e4m3 A is not served)");
  if (!g->b_scales)
    return unsupported("b_scales: the fp8 main loop needs B's block_128x128 or row scales (an unscaled e4m3 B is not served)");
  const bool rowwise = g->a_scales->granularity == ScaleGranularity::row;
  if (rowwise != (g->b_scales->granularity == ScaleGranularity::row))
    return unsupported("b_scales: the fp8 main loop takes A block_1x128 with B block_128x128, or A row with B row; got "
                       "A " + std::string(name(g->a_scales->granularity)) + " with B " +
                       std::string(name(g->b_scales->granularity)));
  if (p.k % 16 != 0)
    return unsupported("A: the fp8 main loop needs K a multiple of 16 (rows of 16-byte multiples for TMA); got K = " +
                       std::to_string(p.k));
  const int64_t kb = (p.k + 127) / 128;
  const TensorDesc& sa = g->a_scales->scales;
  const TensorDesc& sb = g->b_scales->scales;
  const bool masked = g->A.rank() == 3;
  if (rowwise) {
    // A's (TotalM,) (masked: (G, MaxM), groups stacked by rows) and B's (G, N) with columns contiguous.
    if (masked && sa.shape.size() == 2 && sa.shape[0] > 1 && sa.stride(0) != sa.shape[1] * sa.stride(1))
      return unsupported("a_scales: the fp8 main loop reads a masked A's (G, MaxM) row scales with the groups stacked "
                         "by rows (stride[0] == MaxM * stride[1]); got " + sa.describe());
    if (sb.shape.size() != 2 || (sb.shape[1] > 1 && sb.stride(1) != 1))
      return unsupported("b_scales: the fp8 main loop reads B's row scales (G, N) with the columns contiguous; got " +
                         sb.describe());
    if (!fits_int32(sa.stride(sa.rank() - 1)) || !fits_int32(sb.stride(0)))
      return unsupported("a_scales: the fp8 main loop takes scale strides below 2^31 elements");
    return Status::ok();
  }
  if (sa.shape.size() != (masked ? 3u : 2u) || sb.shape.size() != 3)
    return unsupported(masked ? "a_scales: the fp8 main loop reads a masked A's scales (G, MaxM, KB) and B's "
                                "(G, ceil(N/128), KB)"
                              : "a_scales: the fp8 main loop reads A's scales (TotalM, KB) and B's (G, ceil(N/128), KB)");
  // The masked A's scales are read as one (G * MaxM, KB) matrix: groups stacked by rows.
  if (masked && sa.shape[0] > 1 && sa.stride(0) != sa.shape[1] * sa.stride(1))
    return unsupported("a_scales: the fp8 main loop reads a masked A's (G, MaxM, KB) scales with the groups stacked "
                       "by rows (stride[0] == MaxM * stride[1]); got " + sa.describe());
  if (sb.stride(1) != kb)
    return unsupported("b_scales: the fp8 main loop reads 128x128 scales whose N blocks are ceil(K/128) = " +
                       std::to_string(kb) + " elements apart (unpadded rows); got " + std::to_string(sb.stride(1)));
  if (!fits_int32(sa.stride(sa.rank() - 2)))
    return unsupported("a_scales: the fp8 main loop takes a row stride below 2^31 elements");
  if (!fits_int32(sb.stride(0)))
    return unsupported("b_scales: the fp8 main loop takes a group stride below 2^31 elements");
  return Status::ok();
}

void bind_fp8_scales(const Arguments& args, KernelProblem* p) {
  const GroupedGemmArguments* g = grouped(args);
  if (g == nullptr || !g->a_scales || !g->b_scales) return;
  p->a_scales = static_cast<const float*>(g->a_scales->scales.data);
  p->b_scales = static_cast<const float*>(g->b_scales->scales.data);
  const TensorDesc& sa = g->a_scales->scales;
  // Between rows of A's scales: (TotalM, KB) or (G, MaxM, KB) blocks, or rowwise (TotalM,) / (G, MaxM).
  p->a_scale_row_stride = fp8_rowwise(args) ? sa.stride(sa.rank() - 1) : sa.stride(sa.rank() - 2);
  p->b_scale_group_stride = g->b_scales->scales.stride(0);
}

bool fp8_rowwise(const Arguments& args) {
  const GroupedGemmArguments* g = grouped(args);
  return g != nullptr && g->a_scales && g->a_scales->granularity == ScaleGranularity::row;
}

}  // namespace gemmops::sm90
