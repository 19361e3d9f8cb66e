// src/core/operator.cpp: the non-virtual interface of Operator: the checks every operator shares
// SPDX-License-Identifier: Apache-2.0
#include "gemmops/operator.hpp"

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <variant>

#include "arguments/rules.hpp"
#include "core/constraints.hpp"
#include "core/operator_memo.hpp"
#include "core/scale_geometry.hpp"

namespace gemmops {

namespace {

// Tensors with no elements may have no memory (torch gives empty tensors a null pointer), and an
// expert-parallel rank with no tokens must still be able to run.
Status refuse_fake(const TensorDesc& t, const char* role) {
  if (!t.is_fake() || t.numel() == 0) return Status::ok();
  return invalid_argument(std::string(role) + ": run needs data; got a fake tensor (no data pointer)");
}

Status refuse_fakes(const Arguments& args) {
  GEMMOPS_TRY(refuse_fake(operand_a(args), "A"));
  GEMMOPS_TRY(refuse_fake(operand_b(args), "B"));
  GEMMOPS_TRY(refuse_fake(operand_out(args), "out"));
  if (const auto* g = std::get_if<GroupedGemmArguments>(&args)) {
    GEMMOPS_TRY(refuse_fake(g->offsets, "offsets"));
    if (g->a_row_index) GEMMOPS_TRY(refuse_fake(*g->a_row_index, "a_row_index"));
    if (g->a_k_index) GEMMOPS_TRY(refuse_fake(*g->a_k_index, "a_k_index"));
    if (g->b_k_index) GEMMOPS_TRY(refuse_fake(*g->b_k_index, "b_k_index"));
  }
  const EpilogueOps& e = epilogue_of(args);
  if (e.bias) GEMMOPS_TRY(refuse_fake(*e.bias, "epilogue.bias"));
  if (e.row_scale) GEMMOPS_TRY(refuse_fake(*e.row_scale, "epilogue.row_scale"));
  if (e.pre_activation) GEMMOPS_TRY(refuse_fake(*e.pre_activation, "epilogue.pre_activation"));
  if (const auto& g = e.activation_grad) {
    GEMMOPS_TRY(refuse_fake(g->pre_activation, "epilogue.activation_grad.pre_activation"));
    GEMMOPS_TRY(refuse_fake(g->scaled_activation, "epilogue.activation_grad.scaled_activation"));
    GEMMOPS_TRY(refuse_fake(g->score_grad_partials, "epilogue.activation_grad.score_grad_partials"));
  }
  if (const auto& s = detail::scales_of(args, true)) GEMMOPS_TRY(refuse_fake(s->scales, "a_scales"));
  if (const auto& s = detail::scales_of(args, false)) GEMMOPS_TRY(refuse_fake(s->scales, "b_scales"));
  return Status::ok();
}

}  // namespace

Operator::Operator(OperatorMetadata metadata)
    : metadata_(std::move(metadata)), memo_(std::make_shared<detail::OperatorMemo>()) {}

// The rules after validation: the target, the operator's constraints, its own extra rules.
Status Operator::supports_uncached(const Arguments& args, const Target& target) const {
  if (!target.can_run(metadata_.target)) {
    return unsupported("target: " + name() + " is built for " + metadata_.target.to_string() +
                       ", which does not run on " + target.to_string());
  }
  GEMMOPS_TRY(detail::check_constraints_of_valid(metadata_.constraints, args, name()));
  return supports_extra(args, target);
}

// Same answers, same order of rules with and without the memo: the structure, then where the data
// points and the epilogue's scalars (checked on every call), then the rest.
Status Operator::supports(const Arguments& args, const Target& target) const {
  const bool memoised = answers_by_signature() && !detail::has_host_offset_values(args);
  const detail::Signature sig = memoised ? detail::signature_of(args, target) : detail::Signature{};
  if (!sig.valid) {
    GEMMOPS_TRY(validate(args));
    return supports_uncached(args, target);
  }
  std::optional<detail::MemoEntry> entry = memo_->find(sig);
  if (!entry) {
    entry.emplace();
    entry->structure = validate_structure(args);
    if (entry->structure) entry->rest = supports_uncached(args, target);
    memo_->put(sig, *entry);
  }
  GEMMOPS_TRY(entry->structure);
  GEMMOPS_TRY(detail::validate_per_call(args));
  return entry->rest;
}

Result<Artifact> Operator::compile(const Arguments& args) const {
  GEMMOPS_TRY(supports(args));
  Result<Artifact> artifact = do_compile(args);
  if (artifact && artifact->operator_name() != name()) {
    return internal_error("artifact: " + name() + " compiled an artifact named \"" + artifact->operator_name() +
                          "\"; an operator must name its artifacts after itself");
  }
  return artifact;
}

std::size_t Operator::workspace_size(const Arguments& args) const {
  // Hooks may assume supported arguments; nothing can run on others, so they need no workspace.
  if (!supports(args)) return 0;
  return do_workspace_size(args);
}

Status Operator::run(const Arguments& args, const Artifact& artifact, Stream stream, Workspace workspace) const {
  GEMMOPS_TRY(refuse_fakes(args));
  GEMMOPS_TRY(supports(args));
  Artifact compiled;
  const Artifact* use = &artifact;
  if (artifact.empty()) {
    GEMMOPS_ASSIGN_OR_RETURN(compiled, compile(args));
    use = &compiled;
  } else if (artifact.operator_name() != name()) {
    return invalid_argument("artifact: must come from " + name() + "'s compile(); got one from " +
                            artifact.operator_name());
  }
  const std::size_t need = do_workspace_size(args);
  if (need > 0 && (workspace.bytes < need || workspace.data == nullptr)) {
    return invalid_argument("workspace: must hold at least " + std::to_string(need) + " bytes; got " +
                            std::to_string(workspace.data == nullptr ? 0 : workspace.bytes));
  }
  return do_run(args, *use, stream, workspace);
}

double Operator::estimated_time_us(const Arguments& args, const Target& target) const {
  if (!answers_by_signature() || detail::has_host_offset_values(args)) return do_estimated_time_us(args, target);
  const detail::Signature sig = detail::signature_of(args, target);
  if (!sig.valid) return do_estimated_time_us(args, target);
  std::optional<detail::MemoEntry> entry = memo_->find(sig);
  if (entry && !std::isnan(entry->estimate_us)) return entry->estimate_us;
  const double t = do_estimated_time_us(args, target);
  if (entry && !std::isnan(t)) {  // remembered only next to the support answers it belongs with
    entry->estimate_us = t;
    memo_->put(sig, *entry);
  }
  return t;
}

double Operator::do_estimated_time_us(const Arguments&, const Target&) const {
  return std::numeric_limits<double>::infinity();
}

}  // namespace gemmops
