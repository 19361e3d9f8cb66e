// src/core/scaling_constraints.cpp: check_scalings, the operator rule on fp8 scales (beside
// check_constraints, which calls it)
// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <string>

#include "core/constraints.hpp"
#include "core/scale_geometry.hpp"

namespace gemmops::detail {
namespace {

template <class T>
bool served(const std::vector<T>& list, T v) {
  return std::find(list.begin(), list.end(), v) != list.end();
}

bool is_block(ScaleGranularity g) {
  return g == ScaleGranularity::block_1x128 || g == ScaleGranularity::block_128x128;
}

Status check_operand_scaling(const std::vector<ScaleGranularity>& granularities,
                             const std::vector<ScaleLayout>& layouts, const std::optional<OperandScales>& s,
                             const char* role) {
  if (!s) return Status::ok();
  if (!served(granularities, s->granularity)) {
    return unsupported(std::string(role) + ": " + std::string(name(s->granularity)) +
                       " scaling is not served by this operator");
  }
  if (is_block(s->granularity) && !served(layouts, s->layout)) {
    return unsupported(std::string(role) + ": " + std::string(name(s->layout)) +
                       " block scales are not served by this operator");
  }
  return Status::ok();
}

}  // namespace

Status check_scalings(const ScalingSupport& support, const Arguments& args) {
  GEMMOPS_TRY(check_operand_scaling(support.a, support.layouts, scales_of(args, true), "a_scales"));
  return check_operand_scaling(support.b, support.layouts, scales_of(args, false), "b_scales");
}

}  // namespace gemmops::detail
