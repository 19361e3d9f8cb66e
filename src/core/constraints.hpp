// src/core/constraints.hpp: check_constraints without re-running validate() (for Operator::supports)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "gemmops/metadata.hpp"

namespace gemmops::detail {
/// check_constraints() on arguments already known to pass validate(); `who` (an operator's name)
/// names the operator in the epilogue's reasons.
Status check_constraints_of_valid(const OperandConstraints& c, const Arguments& args,
                                  std::string_view who = "the operator");
/// The fp8 scales of valid `args` against what an operator serves (scaling_constraints.cpp):
/// unsupported, naming a_scales or b_scales, for a granularity or block layout not served.
Status check_scalings(const ScalingSupport& support, const Arguments& args);
}  // namespace gemmops::detail
