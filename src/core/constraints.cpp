// src/core/constraints.cpp: check_constraints, the one checker of an operator's operand rules
// SPDX-License-Identifier: Apache-2.0
#include "core/constraints.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/env.hpp"

namespace gemmops {

namespace detail {
namespace {

template <class T>
bool allowed(const std::vector<T>& list, T v) {
  return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
}

template <class T>
std::string list_string(const std::vector<T>& list) {
  std::string s;
  for (std::size_t i = 0; i < list.size(); ++i) s += (i > 0 ? ", " : "") + std::string(name(list[i]));
  return s;
}

std::string kind_name(Device::Kind k) { return k == Device::Kind::cuda ? "cuda" : "cpu"; }

Status check_dtype(const std::vector<DType>& list, DType t, const char* role) {
  if (allowed(list, t)) return Status::ok();
  return unsupported(std::string(role) + ": dtype must be one of " + list_string(list) + "; got " +
                     std::string(name(t)));
}

std::string strides_string(const TensorDesc& t) {
  std::string s = "(";
  for (std::size_t i = 0; i < t.strides.size(); ++i) s += (i > 0 ? ", " : "") + std::to_string(t.strides[i]);
  return s + (t.strides.size() == 1 ? ",)" : ")");
}

// A tensor with no elements is never read or written, so its strides say nothing about its layout
// (numpy gives empty arrays zero strides): the rules on majors and strides do not apply to it.
bool has_elements(const TensorDesc& t) { return t.numel() > 0; }

Status check_major(const std::vector<Major>& list, const TensorDesc& t, bool cols_is_k, const char* role) {
  if (list.empty() || !has_elements(t)) return Status::ok();
  Major m;
  if (!matrix_major(t, cols_is_k, &m)) {
    return unsupported(std::string(role) + ": must be " + list_string(list) +
                       "; got neither of its last two dimensions contiguous, strides " + strides_string(t));
  }
  if (allowed(list, m)) return Status::ok();
  return unsupported(std::string(role) + ": must be " + list_string(list) + "; got " + std::string(name(m)));
}

Status check_out_row_major(const OperandConstraints& c, OperationKind kind, const TensorDesc& out) {
  if (!c.out_row_major || out.size(-1) <= 1 || out.stride(-1) == 1 || !has_elements(out)) return Status::ok();
  if (c.k_grouped_out_m_major && k_grouped_out_m_major(kind, out)) return Status::ok();
  return unsupported("out: last dimension must have stride 1 (row-major)" +
                     std::string(c.k_grouped_out_m_major ? ", or, K-grouped, stride 1 along M" : "") +
                     "; got strides " + strides_string(out));
}

Status check_alignment(int alignment, const TensorDesc& t, const char* role) {
  if (alignment <= 1) return Status::ok();
  const auto a = static_cast<uintptr_t>(alignment);
  const uintptr_t address = reinterpret_cast<uintptr_t>(t.data);
  if (address % a != 0) {
    return unsupported(std::string(role) + ": data pointer must be " + std::to_string(alignment) +
                       "-byte aligned; got an address " + std::to_string(address % a) + " bytes past a boundary");
  }
  const auto elem = static_cast<int64_t>(size_of(t.dtype));
  if (!has_elements(t)) return Status::ok();
  for (int i = 0; i < t.rank(); ++i) {
    // A unit stride, or the stride of a dimension that never steps, puts no address off alignment.
    if (t.strides[i] == 1 || t.shape[i] <= 1) continue;
    int64_t bytes = 0;
    if (__builtin_mul_overflow(t.strides[i], elem, &bytes) || bytes % alignment != 0) {
      std::string in_elements;
      if (alignment % elem == 0) {
        in_elements = " (" + std::to_string(alignment / elem) + " elements of " + std::string(name(t.dtype)) + ")";
      }
      return unsupported(std::string(role) + ": strides other than the unit one must be multiples of " +
                         std::to_string(alignment) + " bytes" + in_elements + "; got strides " + strides_string(t));
    }
  }
  return Status::ok();
}

template <class T>
bool listed(const std::vector<T>& list, T v) {
  return std::find(list.begin(), list.end(), v) != list.end();
}

// What an EpilogueSupport serves, for the reasons: "none, silu, swiglu (concatenated), bias".
std::string served(const EpilogueSupport& s) {
  std::string text = "none";
  for (Activation a : kAllActivations) {
    if (a == Activation::none || !listed(s.activations, a)) continue;
    text += ", " + std::string(name(a));
    if (is_gated(a)) {
      std::string layouts;
      for (GateLayout g : s.gate_layouts) layouts += (layouts.empty() ? "" : "/") + std::string(name(g));
      text += " (" + (layouts.empty() ? std::string("no gate layout") : layouts) + ")";
    }
  }
  if (s.bias) text += ", bias";
  if (s.row_scale) text += ", row_scale";
  if (s.pre_activation) text += ", pre_activation";
  if (s.activation_grad) text += ", activation_grad";
  return text;
}

Status check_epilogue(const EpilogueSupport& s, const EpilogueOps& e, std::string_view who) {
  if (e.empty()) return Status::ok();
  auto lacks = [&](const std::string& op) {
    return unsupported("epilogue: " + std::string(who) + " has no " + op + " op; it serves " + served(s));
  };
  if (e.activation != Activation::none) {
    const std::string act(name(e.activation));
    if (!listed(s.activations, e.activation)) {
      return lacks(is_gated(e.activation) ? act + " (" + std::string(name(e.gate_layout)) + ")" : act);
    }
    if (is_gated(e.activation) && !listed(s.gate_layouts, e.gate_layout))
      return lacks(act + " (" + std::string(name(e.gate_layout)) + ")");
  }
  if (e.bias && !s.bias) return lacks("bias");
  if (e.row_scale && !s.row_scale) return lacks("row_scale");
  if (e.pre_activation && !s.pre_activation) return lacks("pre_activation");
  if (e.activation_grad && !s.activation_grad) return lacks("activation_grad");
  return Status::ok();
}

}  // namespace

bool k_grouped_out_m_major(OperationKind kind, const TensorDesc& out) {
  return kind == OperationKind::grouped_k && out.rank() == 3 && out.size(1) > 1 && out.size(2) > 1 &&
         out.stride(1) == 1;
}

Status check_constraints_of_valid(const OperandConstraints& c, const Arguments& args, std::string_view who) {
  const TensorDesc &A = operand_a(args), &B = operand_b(args), &out = operand_out(args);
  GEMMOPS_ASSIGN_OR_RETURN(OperationKind kind, operation_kind(args));
  if (!allowed(c.kinds, kind)) {
    return unsupported("operation: must be one of " + list_string(c.kinds) + "; got " + std::string(name(kind)));
  }
  if (const auto* g = std::get_if<GroupedGemmArguments>(&args); g && g->group_alignment != 1 && !c.aligned_groups) {
    return unsupported("group_alignment: this operator serves contiguous groups only (1); got " +
                       std::to_string(g->group_alignment));
  }
  if (const auto* g = std::get_if<GroupedGemmArguments>(&args); g && g->a_row_index && !c.a_row_index) {
    return unsupported("a_row_index: " + std::string(who) +
                       " does not gather A's rows; gather them into a copy of A, or pick an operator that serves "
                       "a_row_index");
  }
  if (const auto* g = std::get_if<GroupedGemmArguments>(&args)) {
    if (g->a_k_index && !c.a_k_index)
      return unsupported("a_k_index: " + std::string(who) +
                         " does not gather A along K; gather A's columns into a copy, or pick an operator that "
                         "serves a_k_index");
    if (g->b_k_index && !c.b_k_index)
      return unsupported("b_k_index: " + std::string(who) +
                         " does not gather B along K; gather B's rows into a copy, or pick an operator that "
                         "serves b_k_index");
  }
  // A kernel path that has not passed the GPU suite reaches no one by default.
  if (!env::trial_designs()) {
    constexpr const char* kAsk =
        " has not yet passed the GPU suite on this operator: offered only with GEMMOPS_TRIAL_DESIGNS=1";
    if (std::find(c.trial_kinds.begin(), c.trial_kinds.end(), kind) != c.trial_kinds.end())
      return unsupported("operation: " + std::string(name(kind)) + kAsk);
    if (const auto* g = std::get_if<GroupedGemmArguments>(&args); g && g->group_alignment != 1 && c.trial_aligned_groups)
      return unsupported("group_alignment: groups at aligned starts" + std::string(kAsk));
    if (const auto* g = std::get_if<GroupedGemmArguments>(&args); g && g->a_row_index && c.trial_a_row_index)
      return unsupported("a_row_index: the gathered A" + std::string(kAsk));
    if (const auto* g = std::get_if<GroupedGemmArguments>(&args);
        g && c.trial_k_index && (g->a_k_index || g->b_k_index))
      return unsupported(std::string(g->a_k_index ? "a_k_index: the gathered A" : "b_k_index: the gathered B") +
                         " along K" + kAsk);
    if (c.trial_k_grouped_out_m_major && k_grouped_out_m_major(kind, out))
      return unsupported("out: a K-grouped out stored M-major" + std::string(kAsk));
    const EpilogueOps& e = epilogue_of(args);
    // (Only where the operator serves the op at all: otherwise the reason is that it does not.)
    if (c.epilogue.trial_activation_grad && e.activation_grad && c.epilogue.activation_grad)
      return unsupported("epilogue.activation_grad" + std::string(kAsk));
    if (c.epilogue.trial_pre_activation && e.pre_activation && c.epilogue.pre_activation)
      return unsupported("epilogue.pre_activation" + std::string(kAsk));
  }
  if (A.device.kind != c.device) {
    return unsupported("A: must be on a " + kind_name(c.device) + " device; got " + A.device.to_string());
  }
  GEMMOPS_TRY(check_dtype(c.a_dtypes, A.dtype, "A"));
  GEMMOPS_TRY(check_dtype(c.b_dtypes, B.dtype, "B"));
  if (c.a_b_same_dtype && A.dtype != B.dtype) {
    return unsupported("B: dtype must equal A's dtype (" + std::string(name(A.dtype)) + "); got " +
                       std::string(name(B.dtype)));
  }
  GEMMOPS_TRY(check_dtype(c.out_dtypes, out.dtype, "out"));
  GEMMOPS_TRY(check_dtype(c.accumulator_dtypes, accumulator_of(args), "accumulator"));
  GEMMOPS_TRY(check_major(c.a_majors, A, true, "A"));
  GEMMOPS_TRY(check_major(c.b_majors, B, false, "B"));
  GEMMOPS_TRY(check_out_row_major(c, kind, out));
  GEMMOPS_TRY(check_alignment(c.alignment_bytes, A, "A"));
  GEMMOPS_TRY(check_alignment(c.alignment_bytes, B, "B"));
  GEMMOPS_TRY(check_alignment(c.alignment_bytes, out, "out"));
  GEMMOPS_TRY(check_epilogue(c.epilogue, epilogue_of(args), who));
  return check_scalings(c.scalings, args);
}

}  // namespace detail

Status check_constraints(const OperandConstraints& constraints, const Arguments& args) {
  // Validation first: the checks below index shapes and strides that validate() vouches for.
  GEMMOPS_TRY(validate(args));
  return detail::check_constraints_of_valid(constraints, args);
}

}  // namespace gemmops
