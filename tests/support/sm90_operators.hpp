// tests/support/sm90_operators.hpp: the registered sm90 operators, as test parameters printed by name
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <vector>

#include "gemmops/registry.hpp"
#include "support/print_operator.hpp"

namespace gemmops::testing {

/// Built from metadata alone, so the test list is the same on every machine.
inline std::vector<OperatorPtr> sm90_operators() {
  std::vector<OperatorPtr> ops;
  for (const OperatorPtr& op : default_registry().all())
    if (op->metadata().provider == "sm90") ops.push_back(op);
  return ops;
}

}  // namespace gemmops::testing
