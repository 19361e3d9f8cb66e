// src/cpu/dequantize.cpp: fp8 operand x its fp32 scales -> fp32, element by element
// SPDX-License-Identifier: Apache-2.0
#include "cpu/dequantize.hpp"

#include <cstring>
#include <string>

#include "core/scale_geometry.hpp"
#include "cpu/convert.hpp"

namespace gemmops::cpu {
namespace {

float load_fp8(const TensorDesc& t, int64_t offset) {
  const auto code = static_cast<uint8_t>(static_cast<const std::byte*>(t.data)[offset]);
  return t.dtype == DType::e4m3 ? e4m3_to_float(code) : e5m2_to_float(code);
}

float load_scale(const TensorDesc& s, int64_t offset) {
  float v;
  std::memcpy(&v, static_cast<const std::byte*>(s.data) + offset * 4, 4);
  return v;
}

// The group that owns each K of a K-grouped problem (-1: past offsets[G-1], no group).
Result<std::vector<int64_t>> group_of_each_k(const TensorDesc& offsets, int64_t total_k) {
  std::vector<int64_t> group(static_cast<size_t>(total_k), -1);
  int64_t start = 0;
  for (int64_t g = 0; g < offsets.size(0); ++g) {
    int32_t end;
    std::memcpy(&end, static_cast<const std::byte*>(offsets.data) + g * offsets.stride(0) * 4, 4);
    if (end < start || end > total_k) {
      return invalid_argument("offsets: must be non-decreasing and at most " + std::to_string(total_k) +
                              "; got offsets[" + std::to_string(g) + "] = " + std::to_string(end) + " after " +
                              std::to_string(start));
    }
    for (int64_t k = start; k < end; ++k) group[static_cast<size_t>(k)] = g;
    start = end;
  }
  return group;
}

// Writes the operand as a contiguous fp32 tensor of its shape and returns its description.
TensorDesc dequantize(const Arguments& args, bool is_a, const std::vector<int64_t>& group_of_k,
                      std::vector<float>& buffer) {
  const TensorDesc& t = is_a ? operand_a(args) : operand_b(args);
  const std::optional<OperandScales>& s = gemmops::detail::scales_of(args, is_a);
  const gemmops::detail::OperandGeometry g = gemmops::detail::geometry_of(args, is_a);
  const bool lead = s && gemmops::detail::has_lead(g, s->granularity);
  const bool per_group = lead && !g.stacked;  // K-grouped tensor and row scales
  buffer.assign(static_cast<size_t>(t.numel()), 0.0f);
  TensorDesc f = TensorDesc::contiguous(DType::fp32, t.shape, t.device, buffer.data());
  const int r = t.rank();
  // Strides of the operand and of the buffer along instance, MN and K.
  const int mn_dim = is_a ? r - 2 : r - 1, k_dim = is_a ? r - 1 : r - 2;
  for (int64_t i = 0; i < g.instances; ++i) {
    const int64_t t_base = g.stacked ? i * t.strides[0] : 0, f_base = g.stacked ? i * f.strides[0] : 0;
    for (int64_t mn = 0; mn < g.mn; ++mn) {
      for (int64_t k = 0; k < g.k; ++k) {
        float scale = 1.0f;
        if (s) {
          const int64_t instance = per_group ? group_of_k[static_cast<size_t>(k)] : i;
          if (instance < 0) continue;  // K past the last group: read by no group, left 0
          scale = load_scale(s->scales, gemmops::detail::scale_offset(*s, lead, instance, mn, k));
        }
        const float v = load_fp8(t, t_base + mn * t.strides[mn_dim] + k * t.strides[k_dim]);
        buffer[static_cast<size_t>(f_base + mn * f.strides[mn_dim] + k * f.strides[k_dim])] = v * scale;
      }
    }
  }
  return f;
}

}  // namespace

bool has_scales(const Arguments& args) {
  return gemmops::detail::scales_of(args, true).has_value() || gemmops::detail::scales_of(args, false).has_value();
}

Result<DequantizedOperands> dequantize_operands(const Arguments& args, OperationKind kind) {
  std::vector<int64_t> group_of_k;
  if (kind == OperationKind::grouped_k) {
    const auto& g = std::get<GroupedGemmArguments>(args);
    GEMMOPS_ASSIGN_OR_RETURN(group_of_k, group_of_each_k(g.offsets, g.A.size(1)));
  }
  DequantizedOperands d;
  d.args = args;
  TensorDesc a = dequantize(args, true, group_of_k, d.a);
  TensorDesc b = dequantize(args, false, group_of_k, d.b);
  std::visit(
      [&](auto& x) {
        x.A = a;
        x.B = b;
        x.a_scales.reset();
        x.b_scales.reset();
      },
      d.args);
  return d;
}

}  // namespace gemmops::cpu
