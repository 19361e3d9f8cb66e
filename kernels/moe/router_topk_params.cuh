// kernels/moe/router_topk_params.cuh: the parameters of the router's softmax-top-k kernels
// (router_topk.cuh), shared verbatim by the host side (src/moe) and the device code. Plain C++.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "common/fixed_width_ints.cuh"

namespace gemmops::kernels::moe {

/// One router: per token t, p = softmax(logits[t, :]) in fp32; the k experts of largest p + bias
/// (ties: the lower id), in that order; weights p at those experts, divided by their sum when
/// `renormalize`. The backward: grad_logits[t] from grad_weights[t] through the same (see moe.hpp).
struct RouterTopkParams {
  const void* logits;        // (tokens, experts), row stride logits_stride elements
  const float* bias;         // selection bias, row stride bias_stride (0: one (experts,) row), or null
  int* ids;                  // (tokens, k) contiguous: forward's out, backward's in
  float* weights;            // (tokens, k) contiguous, forward's out
  const float* grad_weights; // (tokens, k) contiguous, backward's in
  void* grad_logits;         // (tokens, experts), row stride grad_stride elements, backward's out
  int64_t logits_stride;
  int64_t bias_stride;
  int64_t grad_stride;
  int tokens;
  int experts;
  int k;
  int renormalize;
};

/// Warps of a block, a token each.
inline constexpr int kRouterWarps = 4;
/// The most experts: 32 values a lane (a warp per token, the row in registers and shared memory).
inline constexpr int kRouterMaxExperts = 1024;
/// The most choices: one lane each.
inline constexpr int kRouterMaxK = 32;

}  // namespace gemmops::kernels::moe
