// src/sm90/provider.hpp: registers the Hopper (sm_90a) operators, one per design and dtype combination
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "gemmops/registry.hpp"

namespace gemmops::sm90 {
void register_sm90_operators(Registry& registry);
}  // namespace gemmops::sm90
