// tests/support/print_operator.hpp: gtest prints an OperatorPtr parameter as the operator's name
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <ostream>

#include "gemmops/operator.hpp"

namespace gemmops {
// Found by argument-dependent lookup on std::shared_ptr<const gemmops::Operator>.
inline void PrintTo(const OperatorPtr& op, std::ostream* os) { *os << (op ? op->name() : "null"); }
}  // namespace gemmops
