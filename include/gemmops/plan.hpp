// include/gemmops/plan.hpp: Plan, an operator and its artifact bound to one layout of arguments, so
// that each call costs only the launch
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <optional>

#include "gemmops/operator.hpp"

namespace gemmops {

/// Where one call's operands are; everything else comes from the plan (the epilogue's alpha and
/// limit too). bias and row_scale: the epilogue's operands, when the plan's layout has them.
struct OperandData {
  const void* a = nullptr;
  const void* b = nullptr;
  void* out = nullptr;
  const void* offsets = nullptr;  ///< grouped forms only
  const void* bias = nullptr;
  const void* row_scale = nullptr;
  const void* a_row_index = nullptr;  ///< M-grouped with a gathered A only
  void* pre_activation = nullptr;            ///< EpilogueOps::pre_activation (an output)
  const void* grad_pre_activation = nullptr;  ///< ActivationGrad::pre_activation (h, an input)
  void* scaled_activation = nullptr;         ///< ActivationGrad::scaled_activation
  void* score_grad_partials = nullptr;       ///< ActivationGrad::score_grad_partials
  const void* a_k_index = nullptr;           ///< K-grouped with A gathered along K only
  const void* b_k_index = nullptr;           ///< K-grouped with B gathered along K only
};

/// An operator and its compiled artifact for one layout of arguments: their dtypes, shapes, strides,
/// device and the alignment of their data. run() with the data of any arguments of that layout skips
/// discovery and compile, and the operator answers its checks from memory (the built-in operators:
/// Operator::answers_by_signature), so a call costs about the launch. Made by make_plan(); cheap to
/// copy (shared), immutable, thread-safe.
class Plan {
 public:
  Plan() = default;
  Plan(Arguments layout, OperatorPtr op, Artifact artifact);

  bool empty() const { return op_ == nullptr; }
  const OperatorPtr& op() const { return op_; }
  const Artifact& artifact() const { return artifact_; }
  /// The layout it serves (its tensors are fake).
  const Arguments& layout() const { return layout_; }
  /// Bytes of workspace run() needs (the same for every call).
  std::size_t workspace_size() const { return workspace_; }

  /// Runs the planned operation on `data` (asynchronous on `stream`, no host synchronisation).
  /// Data whose alignment differs from the layout's is checked afresh and refused when the operator
  /// cannot serve it.
  Status run(const OperandData& data, Stream stream = nullptr, Workspace workspace = {}) const;

 private:
  Arguments layout_;
  OperatorPtr op_;
  Artifact artifact_;
  std::size_t workspace_ = 0;
};

/// A plan with `op` for the layout of `args` (fake tensors are fine): supports(), then compile().
Result<Plan> make_plan(const Arguments& args, const OperatorPtr& op);

/// A plan with the best operator for `args` on `target` (default: the tensors' device, else
/// GEMMOPS_TARGET): get_operators()'s first. unsupported, naming the first reasons, when none serves.
Result<Plan> make_plan(const Arguments& args, std::optional<Target> target = {});

}  // namespace gemmops
