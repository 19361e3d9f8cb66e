// src/moe/router_topk_kernels.hpp: what NVRTC compiles for router_topk and its backward (one request per
// logits dtype and values a lane), for the launcher and the compile tests
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "gemmops/dtype.hpp"
#include "jit/compile.hpp"

namespace gemmops::moe {

/// Values a lane for E experts: the smallest power of two v with 32 v >= E (1 .. 32).
int router_values_per_lane(int experts);

/// The forward and backward kernels of logits dtype `logits` (bf16, fp16, fp32) and `values` a lane
/// (router_values_per_lane), in that order; no target (set per architecture).
jit::CompileRequest router_topk_request(DType logits, int values);

}  // namespace gemmops::moe
