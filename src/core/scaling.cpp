// src/core/scaling.cpp: names of the scalings, and the geometry of an operand's scales
// SPDX-License-Identifier: Apache-2.0
#include <variant>

#include "core/scale_geometry.hpp"

namespace gemmops {

std::string_view name(ScaleGranularity g) {
  switch (g) {
    case ScaleGranularity::tensor: return "tensor";
    case ScaleGranularity::row: return "row";
    case ScaleGranularity::block_1x128: return "block_1x128";
    case ScaleGranularity::block_128x128: return "block_128x128";
  }
  return "unknown";
}

std::string_view name(ScaleLayout l) { return l == ScaleLayout::mn_major ? "mn_major" : "k_major"; }

ScalingSupport ScalingSupport::all() {
  ScalingSupport s;
  s.a.assign(std::begin(kAllScaleGranularities), std::end(kAllScaleGranularities));
  s.b = s.a;
  s.layouts.assign(std::begin(kAllScaleLayouts), std::end(kAllScaleLayouts));
  return s;
}

std::vector<int64_t> scale_shape(ScaleGranularity granularity, int64_t instances, int64_t mn, int64_t k) {
  detail::OperandGeometry g;
  g.stacked = instances >= 0;
  g.instances = instances < 0 ? 1 : instances;
  g.mn = mn;
  g.k = k;
  return detail::expected_scale_shape(g, granularity);
}

namespace detail {

OperandGeometry geometry_of(const Arguments& args, bool is_a) {
  OperandGeometry g;
  g.role = is_a ? "A" : "B";
  const TensorDesc& t = is_a ? operand_a(args) : operand_b(args);
  // A (.., MN, K) and B (.., K, MN).
  g.mn = is_a ? t.size(-2) : t.size(-1);
  g.k = is_a ? t.size(-1) : t.size(-2);
  g.stacked = t.rank() == 3;
  g.instances = g.stacked ? t.size(0) : 1;
  g.mn_name = is_a ? "M" : "N";
  g.dims = is_a ? (g.stacked ? "(L,M,K)" : "(M,K)") : (g.stacked ? "(L,K,N)" : "(K,N)");
  g.lead_name = "L";
  if (const auto* gg = std::get_if<GroupedGemmArguments>(&args)) {
    const int a = gg->A.rank(), b = gg->B.rank();
    g.lead_name = "G";
    if (a == 2 && b == 3) {  // M-grouped: A (TotalM,K), B (G,K,N)
      if (is_a) g.mn_name = "TotalM";
      g.dims = is_a ? "(TotalM,K)" : "(G,K,N)";
    } else if (a == 3 && b == 3) {  // masked M-grouped: A (G,MaxM,K), B (G,K,N)
      if (is_a) g.mn_name = "MaxM";
      g.dims = is_a ? "(G,MaxM,K)" : "(G,K,N)";
    } else if (a == 3 && b == 2) {  // N-grouped: A (G,M,K), B (K,TotalN)
      if (!is_a) g.mn_name = "TotalN";
      g.dims = is_a ? "(G,M,K)" : "(K,TotalN)";
    } else {  // K-grouped: A (M,TotalK), B (TotalK,N), out (G,M,N)
      g.k_grouped = true;
      g.groups = gg->out.rank() == 3 ? gg->out.size(0) : 0;
      g.k_name = "TotalK";
      g.dims = is_a ? "(M,TotalK)" : "(TotalK,N)";
    }
  }
  return g;
}

bool has_lead(const OperandGeometry& g, ScaleGranularity granularity) {
  if (g.stacked) return true;
  return g.k_grouped && (granularity == ScaleGranularity::tensor || granularity == ScaleGranularity::row);
}

std::vector<int64_t> expected_scale_shape(const OperandGeometry& g, ScaleGranularity granularity) {
  std::vector<int64_t> shape;
  if (has_lead(g, granularity)) shape.push_back(g.stacked ? g.instances : g.groups);
  switch (granularity) {
    case ScaleGranularity::tensor:
      if (shape.empty()) shape.push_back(1);
      break;
    case ScaleGranularity::row: shape.push_back(g.mn); break;
    case ScaleGranularity::block_1x128: shape.insert(shape.end(), {g.mn, ceil_blocks(g.k)}); break;
    case ScaleGranularity::block_128x128: shape.insert(shape.end(), {ceil_blocks(g.mn), ceil_blocks(g.k)}); break;
  }
  return shape;
}

std::string expected_scale_dims(const OperandGeometry& g, ScaleGranularity granularity) {
  std::string dims = "(";
  if (has_lead(g, granularity)) dims += std::string(g.lead_name) + (granularity == ScaleGranularity::tensor ? "," : ", ");
  const std::string mn = g.mn_name, k = g.k_name;
  switch (granularity) {
    case ScaleGranularity::tensor:
      if (!has_lead(g, granularity)) dims += "1,";
      break;
    case ScaleGranularity::row: dims += mn; break;
    case ScaleGranularity::block_1x128: dims += mn + ", ceil(" + k + "/128)"; break;
    case ScaleGranularity::block_128x128: dims += "ceil(" + mn + "/128), ceil(" + k + "/128)"; break;
  }
  return dims + ")";
}

const std::optional<OperandScales>& scales_of(const Arguments& args, bool is_a) {
  return std::visit([is_a](const auto& a) -> const std::optional<OperandScales>& { return is_a ? a.a_scales : a.b_scales; },
                    args);
}

}  // namespace detail
}  // namespace gemmops
