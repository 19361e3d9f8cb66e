// src/core/plan.cpp: Plan: a layout's operator and artifact, and run() with new data
// SPDX-License-Identifier: Apache-2.0
#include "gemmops/plan.hpp"

#include <variant>

namespace gemmops {
namespace {

// The layout keeps no data: the caller's buffers may be gone by the time the plan runs again.
Arguments without_data(Arguments args) {
  std::visit([](auto& a) { a.A.data = a.B.data = a.out.data = nullptr; }, args);
  if (auto* g = std::get_if<GroupedGemmArguments>(&args)) g->offsets.data = nullptr;
  std::visit(
      [](auto& a) {
        if (a.epilogue.bias) a.epilogue.bias->data = nullptr;
        if (a.epilogue.row_scale) a.epilogue.row_scale->data = nullptr;
        if (a.epilogue.pre_activation) a.epilogue.pre_activation->data = nullptr;
        if (auto& g = a.epilogue.activation_grad)
          g->pre_activation.data = g->scaled_activation.data = g->score_grad_partials.data = nullptr;
      },
      args);
  return args;
}

}  // namespace

Plan::Plan(Arguments layout, OperatorPtr op, Artifact artifact)
    : layout_(without_data(std::move(layout))), op_(std::move(op)), artifact_(std::move(artifact)) {
  workspace_ = op_ == nullptr ? 0 : op_->workspace_size(layout_);
}

Status Plan::run(const OperandData& data, Stream stream, Workspace workspace) const {
  if (op_ == nullptr) return invalid_argument("plan: is empty; make one with make_plan()");
  Arguments args = layout_;
  std::visit(
      [&](auto& a) {
        a.A.data = const_cast<void*>(data.a);  // read only: TensorDesc has one pointer type for all operands
        a.B.data = const_cast<void*>(data.b);
        a.out.data = data.out;
        if (a.epilogue.bias) a.epilogue.bias->data = const_cast<void*>(data.bias);
        if (a.epilogue.row_scale) a.epilogue.row_scale->data = const_cast<void*>(data.row_scale);
        if (a.epilogue.pre_activation) a.epilogue.pre_activation->data = data.pre_activation;
        if (auto& g = a.epilogue.activation_grad) {
          g->pre_activation.data = const_cast<void*>(data.grad_pre_activation);
          g->scaled_activation.data = data.scaled_activation;
          g->score_grad_partials.data = data.score_grad_partials;
        }
      },
      args);
  if (auto* g = std::get_if<GroupedGemmArguments>(&args)) {
    g->offsets.data = const_cast<void*>(data.offsets);
    if (g->a_row_index) g->a_row_index->data = const_cast<void*>(data.a_row_index);
    if (g->a_k_index) g->a_k_index->data = const_cast<void*>(data.a_k_index);
    if (g->b_k_index) g->b_k_index->data = const_cast<void*>(data.b_k_index);
  }
  return op_->run(args, artifact_, stream, workspace);
}

Result<Plan> make_plan(const Arguments& args, const OperatorPtr& op) {
  if (op == nullptr) return invalid_argument("operator: must not be null");
  GEMMOPS_TRY(op->supports(args));
  GEMMOPS_ASSIGN_OR_RETURN(Artifact artifact, op->compile(args));
  return Plan(args, op, std::move(artifact));
}

}  // namespace gemmops
