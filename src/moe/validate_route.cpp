// src/moe/validate_route.cpp: the rules of RouteArguments, each failure naming the operand and the rule
// SPDX-License-Identifier: Apache-2.0
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "arguments/rules.hpp"
#include "gemmops/moe.hpp"
#include "moe/route_params.cuh"

namespace gemmops {
namespace {

Status need(bool ok, const TensorDesc& t, const char* role, const std::string& rule) {
  if (ok) return Status::ok();
  return invalid_argument(std::string(role) + ": must be " + rule + "; got " + t.describe());
}

bool contiguous(const TensorDesc& t) {
  int64_t expect = 1;
  for (int d = t.rank() - 1; d >= 0; --d) {
    if (t.size(d) > 1 && t.stride(d) != expect) return false;
    expect *= t.size(d);
  }
  return true;
}

/// An int32 or fp32 tensor of `shape`, contiguous, on the ids' device.
Status need_tensor(const TensorDesc& t, const char* role, DType dtype, const std::vector<int64_t>& shape,
                   const std::string& dims, const TensorDesc& ids) {
  GEMMOPS_TRY(detail::validate_layout(t, role));
  GEMMOPS_TRY(need(t.dtype == dtype, t, role, std::string(name(dtype))));
  GEMMOPS_TRY(need(t.shape == shape, t, role, dims));
  GEMMOPS_TRY(need(contiguous(t), t, role, "contiguous"));
  return need(t.device == ids.device, t, role, "on topk_ids' device (" + ids.device.to_string() + ")");
}

/// `a` and `b` share no byte (tensors without data or elements share none).
Status need_apart(const TensorDesc& a, const char* a_role, const TensorDesc& b, const char* b_role) {
  if (a.data == nullptr || b.data == nullptr || a.numel() == 0 || b.numel() == 0) return Status::ok();
  const auto a0 = reinterpret_cast<uintptr_t>(a.data), b0 = reinterpret_cast<uintptr_t>(b.data);
  const uintptr_t a1 = a0 + static_cast<uintptr_t>(a.span_bytes()), b1 = b0 + static_cast<uintptr_t>(b.span_bytes());
  if (a0 < b1 && b0 < a1) return invalid_argument(std::string(a_role) + ": must not overlap " + b_role + " in memory");
  return Status::ok();
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
  std::vector<std::pair<const TensorDesc*, const char*>> outs = {{&a.offsets, "offsets"}, {&a.token, "token"},
                                                                 {&a.pair, "pair"}};
  std::vector<std::pair<const TensorDesc*, const char*>> ins = {{&ids, "topk_ids"}};
  if (a.scores) {
    GEMMOPS_TRY(need_tensor(*a.scores, "scores", DType::fp32, {t, k}, "topk_ids' shape " + tk, ids));
    GEMMOPS_TRY(need_tensor(*a.sorted_scores, "sorted_scores", DType::fp32, {pairs},
                            "(T k,) = (" + std::to_string(pairs) + ")", ids));
    outs.emplace_back(&*a.sorted_scores, "sorted_scores");
    ins.emplace_back(&*a.scores, "scores");
  }
  // No output may overlap an input or another output.
  for (size_t i = 0; i < outs.size(); ++i) {
    for (const auto& [in, role] : ins) GEMMOPS_TRY(need_apart(*outs[i].first, outs[i].second, *in, role));
    for (size_t j = i + 1; j < outs.size(); ++j)
      GEMMOPS_TRY(need_apart(*outs[i].first, outs[i].second, *outs[j].first, outs[j].second));
  }
  return Status::ok();
}

}  // namespace gemmops
