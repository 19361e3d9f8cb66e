// src/simt/provider.hpp: registers the portable CUDA operators (compute capability 8.0 and later)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "gemmops/registry.hpp"

namespace gemmops::simt {
/// Adds one SimtGemmOperator per (A/B dtype, out dtype) pair of bf16, fp16 and fp32 to `registry`.
void register_simt_operators(Registry& registry);
}  // namespace gemmops::simt
