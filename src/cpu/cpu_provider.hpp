// src/cpu/cpu_provider.hpp: registers the CPU operators (the reference, and the fallback without a GPU)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "gemmops/registry.hpp"

namespace gemmops::cpu {
/// Adds one CPU operator per operation kind to `registry`.
void register_cpu_operators(Registry& registry);
}  // namespace gemmops::cpu
