// src/moe/validate_router_topk.cpp: the rules of RouterTopkArguments and RouterTopkBackwardArguments,
// each failure naming the operand and the rule
// SPDX-License-Identifier: Apache-2.0
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "arguments/rules.hpp"
#include "gemmops/moe.hpp"
#include "moe/moe_rules.hpp"
#include "moe/router_topk_params.cuh"

namespace gemmops {
namespace {

using moe::contiguous;
using moe::need;
using moe::need_all_apart;

namespace k = kernels::moe;

bool float_dtype(DType d) { return d == DType::bf16 || d == DType::fp16 || d == DType::fp32; }

/// logits (T, E): a 16-bit or fp32 matrix with contiguous columns, 1 <= E <= 1024.
Status need_logits(const TensorDesc& l) {
  GEMMOPS_TRY(detail::validate_layout(l, "logits"));
  GEMMOPS_TRY(need(l.rank() == 2, l, "logits", "(T, E) (rank 2)"));
  GEMMOPS_TRY(need(float_dtype(l.dtype), l, "logits", "bf16, fp16 or fp32"));
  GEMMOPS_TRY(need(l.size(1) <= 1 || l.stride(1) == 1, l, "logits", "of contiguous columns (stride 1 along E)"));
  GEMMOPS_TRY(need(l.size(1) >= 1 && l.size(1) <= k::kRouterMaxExperts, l, "logits",
                   "of 1 .. " + std::to_string(k::kRouterMaxExperts) + " experts (columns)"));
  return need(l.size(0) <= INT32_MAX / k::kRouterMaxK, l, "logits", "of fewer than 2^26 tokens (rows)");
}

/// A (T, k) int32 or fp32 tensor, contiguous, on the logits' device.
Status need_choices(const TensorDesc& t, const char* role, DType dtype, int64_t tokens, int64_t kk,
                    const TensorDesc& logits) {
  GEMMOPS_TRY(detail::validate_layout(t, role));
  GEMMOPS_TRY(need(t.dtype == dtype, t, role, std::string(name(dtype))));
  GEMMOPS_TRY(need(t.shape == std::vector<int64_t>{tokens, kk}, t, role,
                   "(T, k) = (" + std::to_string(tokens) + ", " + std::to_string(kk) + ")"));
  GEMMOPS_TRY(need(contiguous(t), t, role, "contiguous"));
  return need(t.device == logits.device, t, role, "on logits' device (" + logits.device.to_string() + ")");
}

}  // namespace

Status validate(const RouterTopkArguments& a) {
  const TensorDesc& l = a.logits;
  GEMMOPS_TRY(need_logits(l));
  const int64_t tokens = l.size(0), experts = l.size(1);
  const int64_t most = std::min<int64_t>(experts, k::kRouterMaxK);
  if (a.k < 1 || a.k > most) {
    return invalid_argument("k: must be 1 .. min(E, " + std::to_string(k::kRouterMaxK) + ") = " + std::to_string(most) +
                            " for logits " + l.shape_string() + "; got " + std::to_string(a.k));
  }
  GEMMOPS_TRY(need_choices(a.topk_ids, "topk_ids", DType::i32, tokens, a.k, l));
  GEMMOPS_TRY(need_choices(a.topk_weights, "topk_weights", DType::fp32, tokens, a.k, l));
  std::vector<moe::Named> ins = {{&l, "logits"}};
  if (a.selection_bias) {
    const TensorDesc& b = *a.selection_bias;
    GEMMOPS_TRY(detail::validate_layout(b, "selection_bias"));
    GEMMOPS_TRY(need(b.dtype == DType::fp32, b, "selection_bias", "fp32"));
    const bool per_expert = b.shape == std::vector<int64_t>{experts};
    const bool per_token = b.shape == std::vector<int64_t>{tokens, experts};
    GEMMOPS_TRY(need(per_expert || per_token, b, "selection_bias",
                     "(E,) = (" + std::to_string(experts) + ") or (T, E) = " + l.shape_string()));
    GEMMOPS_TRY(need(b.size(-1) <= 1 || b.stride(-1) == 1, b, "selection_bias", "of contiguous columns"));
    GEMMOPS_TRY(need(b.device == l.device, b, "selection_bias", "on logits' device (" + l.device.to_string() + ")"));
    ins.emplace_back(&b, "selection_bias");
  }
  return need_all_apart({{&a.topk_ids, "topk_ids"}, {&a.topk_weights, "topk_weights"}}, ins);
}

Status validate(const RouterTopkBackwardArguments& a) {
  const TensorDesc& l = a.logits;
  GEMMOPS_TRY(need_logits(l));
  const int64_t tokens = l.size(0);
  const TensorDesc& ids = a.topk_ids;
  GEMMOPS_TRY(detail::validate_layout(ids, "topk_ids"));
  GEMMOPS_TRY(need(ids.rank() == 2 && ids.size(0) == tokens && ids.size(1) >= 1 && ids.size(1) <= k::kRouterMaxK,
                   ids, "topk_ids", "(T, k) with T = " + std::to_string(tokens) + " (logits' rows) and k 1 .. " +
                                        std::to_string(k::kRouterMaxK)));
  GEMMOPS_TRY(need_choices(ids, "topk_ids", DType::i32, tokens, ids.size(1), l));
  GEMMOPS_TRY(need_choices(a.grad_topk_weights, "grad_topk_weights", DType::fp32, tokens, ids.size(1), l));
  const TensorDesc& g = a.grad_logits;
  GEMMOPS_TRY(detail::validate_layout(g, "grad_logits"));
  GEMMOPS_TRY(need(g.dtype == l.dtype, g, "grad_logits", "logits' dtype (" + std::string(name(l.dtype)) + ")"));
  GEMMOPS_TRY(need(g.shape == l.shape, g, "grad_logits", "logits' shape " + l.shape_string()));
  GEMMOPS_TRY(need(g.size(1) <= 1 || g.stride(1) == 1, g, "grad_logits", "of contiguous columns"));
  GEMMOPS_TRY(need(g.device == l.device, g, "grad_logits", "on logits' device (" + l.device.to_string() + ")"));
  return need_all_apart({{&g, "grad_logits"}},
                        {{&l, "logits"}, {&ids, "topk_ids"}, {&a.grad_topk_weights, "grad_topk_weights"}});
}

}  // namespace gemmops
