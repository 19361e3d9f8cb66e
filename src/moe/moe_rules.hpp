// src/moe/moe_rules.hpp: the rules the MoE steps share (route, router_topk, gather_reduce): a failed rule
// naming the operand, row-major contiguity, outputs that overlap nothing, and run's refusal of fakes
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "gemmops/status.hpp"
#include "gemmops/tensor.hpp"

namespace gemmops::moe {

/// ok, or invalid_argument "<role>: must be <rule>; got <t>".
Status need(bool ok, const TensorDesc& t, const char* role, const std::string& rule);

/// Row-major contiguous (dimensions of size 1 may have any stride).
bool contiguous(const TensorDesc& t);

/// An operand and its name in messages.
using Named = std::pair<const TensorDesc*, const char*>;

/// Run needs data: invalid_argument "<role>: run needs data; got a fake tensor (no data pointer)" for
/// the first fake operand with elements (null entries, the absent optional ones, are skipped; an
/// empty tensor may have no memory). As the GEMM operators' run refuses fakes (core/operator.cpp).
Status refuse_fakes(const std::vector<Named>& operands);

/// No output shares a byte with an input or another output (tensors without data or elements share
/// none): "<output>: must not overlap <other> in memory".
Status need_all_apart(const std::vector<Named>& outs, const std::vector<Named>& ins);

}  // namespace gemmops::moe
