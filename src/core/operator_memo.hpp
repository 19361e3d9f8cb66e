// src/core/operator_memo.hpp: an operator's answers per argument signature (support, estimate),
// so that discovery and run() decide each layout once instead of on every call
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <limits>

#include "core/signature_memo.hpp"
#include "gemmops/status.hpp"

namespace gemmops::detail {

/// What supports() and estimated_time_us() answered for one signature (on one target).
struct MemoEntry {
  Status structure;  ///< validate_structure()
  Status rest;       ///< the target, the operator's constraints and supports_extra()
  double estimate_us = std::numeric_limits<double>::quiet_NaN();  ///< NaN: not asked yet
};

class OperatorMemo : public SignatureMemo<MemoEntry> {};

}  // namespace gemmops::detail
