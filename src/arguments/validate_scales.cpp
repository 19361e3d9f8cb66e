// src/arguments/validate_scales.cpp: the rules on a_scales and b_scales (fp8 operands' fp32 scales)
// SPDX-License-Identifier: Apache-2.0
#include <string>

#include "arguments/rules.hpp"
#include "core/scale_geometry.hpp"

namespace gemmops::detail {

namespace {

std::string strides_string(const TensorDesc& t) { return tuple_string(t.strides.data(), t.strides.size()); }

bool is_block(ScaleGranularity g) {
  return g == ScaleGranularity::block_1x128 || g == ScaleGranularity::block_128x128;
}

Status validate_scaled_operand_is_fp8(const TensorDesc& operand, const char* role, const char* operand_role) {
  if (is_fp8(operand.dtype)) return Status::ok();
  return invalid_argument(std::string(role) + ": scales apply to fp8 operands (e4m3, e5m2) only; " + operand_role +
                          " is " + std::string(name(operand.dtype)));
}

Status validate_scales_dtype(const TensorDesc& s, const char* role) {
  if (s.dtype == DType::fp32) return Status::ok();
  return invalid_argument(std::string(role) + ": dtype must be fp32; got " + std::string(name(s.dtype)));
}

Status validate_scales_shape(const OperandScales& s, const OperandGeometry& g, const TensorDesc& operand,
                             const char* role) {
  const std::vector<int64_t> want = expected_scale_shape(g, s.granularity);
  if (s.scales.shape == want) return Status::ok();
  return invalid_argument(std::string(role) + ": " + std::string(name(s.granularity)) + " scales of " +
                          labelled(g.role, g.dims, operand) + " must have shape " +
                          expected_scale_dims(g, s.granularity) + " = " + tuple_string(want.data(), want.size()) +
                          "; got " + s.scales.shape_string());
}

// Elements one instance of the scales covers: the least stride(0) that keeps instances apart.
int64_t instance_span(const TensorDesc& t) {
  int64_t span = 1;
  for (int i = 1; i < t.rank(); ++i)
    if (t.shape[i] > 0) span += (t.shape[i] - 1) * t.strides[i];
  return span;
}

// A block scale tensor (..., X, KB) as its layout sees it: the contiguous dimension and the other.
struct BlockDims {
  int unit = 0, outer = 0;
  std::string unit_name;
};

BlockDims block_dims(const OperandScales& s, const OperandGeometry& g) {
  const int rows = s.scales.rank() - 2, cols = s.scales.rank() - 1;  // (MN or MN blocks, K blocks)
  if (s.layout == ScaleLayout::k_major) return {cols, rows, "their last dimension (K blocks)"};
  const std::string mn = s.granularity == ScaleGranularity::block_1x128 ? g.mn_name : std::string(g.mn_name) + " blocks";
  return {rows, cols, "dimension -2 (" + mn + ")"};
}

// Tensor and row scales have no K-block dimension, so no second layout.
Status validate_layout_applies(const OperandScales& s, const char* role) {
  if (is_block(s.granularity) || s.layout == ScaleLayout::k_major) return Status::ok();
  return invalid_argument(std::string(role) + ": layout " + std::string(name(s.layout)) +
                          " applies to block scales only; got " + std::string(name(s.granularity)) + " scales");
}

Status validate_block_unit_stride(const OperandScales& s, const BlockDims& d, const char* role) {
  const TensorDesc& t = s.scales;
  if (t.shape[d.unit] <= 1 || t.strides[d.unit] == 1) return Status::ok();
  return invalid_argument(std::string(role) + ": " + std::string(name(s.layout)) + " block scales must have " +
                          d.unit_name + " contiguous (stride 1); got strides " + strides_string(t));
}

Status validate_block_rows_apart(const OperandScales& s, const BlockDims& d, const char* role) {
  const TensorDesc& t = s.scales;
  if (t.shape[d.outer] <= 1 || t.strides[d.outer] >= t.shape[d.unit]) return Status::ok();
  return invalid_argument(std::string(role) + ": " + std::string(name(s.layout)) +
                          " block scales must not overlap: stride(" + std::to_string(d.outer - t.rank()) +
                          ") must be at least " + std::to_string(t.shape[d.unit]) + "; got strides " +
                          strides_string(t));
}

Status validate_block_instances_apart(const OperandScales& s, const OperandGeometry& g, const char* role) {
  const TensorDesc& t = s.scales;
  if (t.rank() < 3 || t.shape[0] <= 1 || t.strides[0] >= instance_span(t)) return Status::ok();
  return invalid_argument(std::string(role) + ": block scales of different " + g.lead_name +
                          " must not overlap: stride(0) must be at least " + std::to_string(instance_span(t)) +
                          "; got strides " + strides_string(t));
}

Status validate_scales_layout(const OperandScales& s, const OperandGeometry& g, const char* role) {
  GEMMOPS_TRY(validate_layout_applies(s, role));
  // Tensor and row scales take any strides; a tensor without elements is never read.
  if (!is_block(s.granularity) || s.scales.numel() == 0) return Status::ok();
  const BlockDims d = block_dims(s, g);
  GEMMOPS_TRY(validate_block_unit_stride(s, d, role));
  GEMMOPS_TRY(validate_block_rows_apart(s, d, role));
  return validate_block_instances_apart(s, g, role);
}

Status validate_operand_scales(const Arguments& args, bool is_a) {
  const std::optional<OperandScales>& s = scales_of(args, is_a);
  if (!s) return Status::ok();
  const char* role = is_a ? "a_scales" : "b_scales";
  const TensorDesc& operand = is_a ? operand_a(args) : operand_b(args);
  GEMMOPS_TRY(validate_scaled_operand_is_fp8(operand, role, is_a ? "A" : "B"));
  GEMMOPS_TRY(validate_scales_tensor(*s, geometry_of(args, is_a), operand, role));
  return validate_same_device(operand_a(args), s->scales, role);
}

}  // namespace

Status validate_scales_tensor(const OperandScales& s, const OperandGeometry& g, const TensorDesc& operand,
                              const char* role) {
  GEMMOPS_TRY(validate_scales_dtype(s.scales, role));
  GEMMOPS_TRY(validate_layout(s.scales, role));
  GEMMOPS_TRY(validate_scales_shape(s, g, operand, role));
  return validate_scales_layout(s, g, role);
}

Status validate_scales(const Arguments& args) {
  GEMMOPS_TRY(validate_operand_scales(args, true));
  return validate_operand_scales(args, false);
}

Status validate_scales_memory(const Arguments& args) {
  const TensorDesc& out = operand_out(args);
  for (bool is_a : {true, false}) {
    const std::optional<OperandScales>& s = scales_of(args, is_a);
    if (s) GEMMOPS_TRY(validate_no_overlap(out, s->scales, is_a ? "a_scales" : "b_scales"));
  }
  return Status::ok();
}

}  // namespace gemmops::detail
