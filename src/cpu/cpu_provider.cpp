// src/cpu/cpu_provider.cpp: registers one CPU operator per operation kind
// SPDX-License-Identifier: Apache-2.0
#include "cpu/cpu_provider.hpp"

#include <memory>

#include "cpu/cpu_operator.hpp"

namespace gemmops::cpu {

void register_cpu_operators(Registry& registry) {
  for (OperationKind kind : kAllOperationKinds) {
    // The names are distinct by construction, so add() cannot refuse them.
    Status s = registry.add(std::make_shared<CpuOperator>(kind));
    (void)s;
  }
}

}  // namespace gemmops::cpu
