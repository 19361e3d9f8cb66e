// src/moe/moe_rules.cpp: the rules the MoE steps share
// SPDX-License-Identifier: Apache-2.0
#include "moe/moe_rules.hpp"

#include <cstdint>

namespace gemmops::moe {
namespace {

Status need_apart(const TensorDesc& a, const char* a_role, const TensorDesc& b, const char* b_role) {
  if (a.data == nullptr || b.data == nullptr || a.numel() == 0 || b.numel() == 0) return Status::ok();
  const auto a0 = reinterpret_cast<uintptr_t>(a.data), b0 = reinterpret_cast<uintptr_t>(b.data);
  const uintptr_t a1 = a0 + static_cast<uintptr_t>(a.span_bytes()), b1 = b0 + static_cast<uintptr_t>(b.span_bytes());
  if (a0 < b1 && b0 < a1) return invalid_argument(std::string(a_role) + ": must not overlap " + b_role + " in memory");
  return Status::ok();
}

}  // namespace

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

Status refuse_fakes(const std::vector<Named>& operands) {
  for (const auto& [t, role] : operands) {
    if (t != nullptr && t->is_fake() && t->numel() > 0)
      return invalid_argument(std::string(role) + ": run needs data; got a fake tensor (no data pointer)");
  }
  return Status::ok();
}

Status need_all_apart(const std::vector<Named>& outs, const std::vector<Named>& ins) {
  for (size_t i = 0; i < outs.size(); ++i) {
    for (const auto& [in, role] : ins) GEMMOPS_TRY(need_apart(*outs[i].first, outs[i].second, *in, role));
    for (size_t j = i + 1; j < outs.size(); ++j)
      GEMMOPS_TRY(need_apart(*outs[i].first, outs[i].second, *outs[j].first, outs[j].second));
  }
  return Status::ok();
}

}  // namespace gemmops::moe
