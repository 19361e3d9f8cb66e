// src/moe/validate_route.cpp: the rules of RouteArguments, each failure naming the operand and the rule
// SPDX-License-Identifier: Apache-2.0
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "arguments/rules.hpp"
#include "gemmops/moe.hpp"
#include "moe/moe_rules.hpp"
#include "moe/route_params.cuh"

namespace gemmops {
namespace {

using moe::contiguous;
using moe::need;
using moe::need_all_apart;

/// An int32 or fp32 tensor of `shape`, contiguous, on the ids' device.
Status need_tensor(const TensorDesc& t, const char* role, DType dtype, const std::vector<int64_t>& shape,
                   const std::string& dims, const TensorDesc& ids) {
  GEMMOPS_TRY(detail::validate_layout(t, role));
  GEMMOPS_TRY(need(t.dtype == dtype, t, role, std::string(name(dtype))));
  GEMMOPS_TRY(need(t.shape == shape, t, role, dims));
  GEMMOPS_TRY(need(contiguous(t), t, role, "contiguous"));
  return need(t.device == ids.device, t, role, "on topk_ids' device (" + ids.device.to_string() + ")");
}

}  // namespace

Status validate(const RouteArguments& a) {
  const TensorDesc& ids = a.topk_ids;
  GEMMOPS_TRY(detail::validate_layout(ids, "topk_ids"));
  GEMMOPS_TRY(need(ids.rank() == 2, ids, "topk_ids", "(T, k) (rank 2)"));
  GEMMOPS_TRY(need(ids.dtype == DType::i32, ids, "topk_ids", "int32"));
  GEMMOPS_TRY(need(contiguous(ids), ids, "topk_ids", "contiguous"));
  if (a.num_experts < 1 || a.num_experts > kernels::moe::kMaxExperts) {
    return invalid_argument("num_experts: must be 1 .. " + std::to_string(kernels::moe::kMaxExperts) + "; got " +
                            std::to_string(a.num_experts));
  }
  const int64_t t = ids.size(0), k = ids.size(1), pairs = t * k;
  if (pairs > INT32_MAX / 2) {
    return invalid_argument("topk_ids: T k pairs must be below 2^30; got (T, k) = " + ids.shape_string());
  }
  const std::string tk = "(T, k) = (" + std::to_string(t) + ", " + std::to_string(k) + ")";
  GEMMOPS_TRY(need_tensor(a.offsets, "offsets", DType::i32, {a.num_experts}, "(E,) = (" + std::to_string(a.num_experts) + ")", ids));
  GEMMOPS_TRY(need_tensor(a.token, "token", DType::i32, {pairs}, "(T k,) = (" + std::to_string(pairs) + ")", ids));
  GEMMOPS_TRY(need_tensor(a.pair, "pair", DType::i32, {t, k}, "topk_ids' shape " + tk, ids));
  if (a.scores.has_value() != a.sorted_scores.has_value()) {
    return invalid_argument(std::string(a.scores ? "sorted_scores" : "scores") +
                            ": scores and sorted_scores come together (both or neither)");
  }
  std::vector<moe::Named> outs = {{&a.offsets, "offsets"}, {&a.token, "token"}, {&a.pair, "pair"}};
  std::vector<moe::Named> ins = {{&ids, "topk_ids"}};
  if (a.scores) {
    GEMMOPS_TRY(need_tensor(*a.scores, "scores", DType::fp32, {t, k}, "topk_ids' shape " + tk, ids));
    GEMMOPS_TRY(need_tensor(*a.sorted_scores, "sorted_scores", DType::fp32, {pairs},
                            "(T k,) = (" + std::to_string(pairs) + ")", ids));
    outs.emplace_back(&*a.sorted_scores, "sorted_scores");
    ins.emplace_back(&*a.scores, "scores");
  }
  return need_all_apart(outs, ins);  // no output may overlap an input or another output
}

}  // namespace gemmops
