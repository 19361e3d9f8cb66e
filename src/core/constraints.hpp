// src/core/constraints.hpp: check_constraints without re-running validate() (for Operator::supports)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "gemmops/metadata.hpp"

namespace gemmops::detail {
/// check_constraints() on arguments already known to pass validate(); `who` (an operator's name)
/// names the operator in the epilogue's reasons.
Status check_constraints_of_valid(const OperandConstraints& c, const Arguments& args,
                                  std::string_view who = "the operator");
/// Whether a `kind` operation's out is a K-grouped (G, M, N) stored M-major: stride 1 along M, each
/// group's result transposed in memory (OperandConstraints::k_grouped_out_m_major). M and N above 1:
/// a single row or column has no major.
bool k_grouped_out_m_major(OperationKind kind, const TensorDesc& out);
/// The fp8 scales of valid `args` against what an operator serves (scaling_constraints.cpp):
/// unsupported, naming a_scales or b_scales, for a granularity or block layout not served.
Status check_scalings(const ScalingSupport& support, const Arguments& args);
}  // namespace gemmops::detail
