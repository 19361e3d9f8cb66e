// src/sm90/plan.cpp: Sm90Plan: the mapping, kernel config, split and estimate of one signature
// SPDX-License-Identifier: Apache-2.0
#include "sm90/plan.hpp"

#include <algorithm>

#include "core/env.hpp"
#include "sm90/calibrations.hpp"
#include "sm90/epilogue_support.hpp"
#include "sm90/fp8_scales.hpp"
#include "sm90/heuristics.hpp"

namespace gemmops::sm90 {

Sm90Plan::Sm90Plan(const Arguments& args, const Sm90Design& design, DType ab, DType out, const MachineModel& model) {
  Result<KernelProblem> mapped = map_problem(args);
  if (!mapped) {
    status_ = mapped.status();
    return;
  }
  problem_ = *mapped;
  if (ab == DType::e4m3) {
    if (Status s = check_fp8_problem(args, problem_); !s) {
      status_ = s;
      return;
    }
  }
  const EpilogueOps& ops = epilogue_ops(args);
  if (Status s = check_epilogue(problem_, ops, design, out); !s) {
    status_ = s;
    return;
  }
  // The op is part of the kernel (one artifact per op).
  config_ = make_kernel_config(design, ab, out, problem_.a_major, problem_.b_major,
                               problem_.kind == OperationKind::grouped_k, kernel_op(ops), problem_.gather_a,
                               problem_.gather_b, problem_.out_m_major);
  if (ab == DType::e4m3) config_.fp8_rowwise = fp8_rowwise(args);
  if (config_.fp8_rowwise && design.design.cluster_m > 1) {
    status_ = unsupported("a_scales: rowwise fp8 scales are served on 1-CTA designs; design " +
                          design.design.to_string() + " is a 2-CTA cluster (its rowwise kernel would spill)");
    return;
  }
  if (const std::string why = cluster_n_refusal(config_); !why.empty()) {
    status_ = unsupported(why);
    return;
  }
  if (problem_.out_m_major && config_.epilogue != 1) {
    status_ = unsupported("out: an M-major K-grouped out is stored by the TMA epilogue (each box transposed); design " +
                          design.design.to_string() + " stores directly: its _tma twins serve it");
    return;
  }
  if (problem_.gather_a || problem_.gather_b) {
    const bool k_grouped = problem_.kind == OperationKind::grouped_k;
    if (const std::string why = k_grouped ? gather_k_refusal(config_) : gather_a_refusal(config_); !why.empty()) {
      status_ = unsupported(why);
      return;
    }
  }
  // Any number of groups: more than the scheduler's shared-memory table holds run as several
  // launches (group_chunks.hpp). With an epilogue op K is never split: the op's kernels have no
  // split-K twin (every unit would start from the bias; docs/kernels.md), and the problems that
  // split (few tiles, long K) are not the ones that fuse an activation.
  const Sm90Design calibrated = calibrated_for(design, model);
  if (has_split_k_twin(config_)) {
    const SplitKChoice split = choose_split_k(problem_, calibrated, model);
    chosen_splits_ = split.splits;
    estimate_us_ = split.us;
  } else {
    chosen_splits_ = 1;
    estimate_us_ = estimate_time_us(problem_, calibrated, model, 1);
  }
  // The plan outlives the arguments it was made from: nothing may point into them.
  problem_.a = problem_.b = problem_.out = nullptr;
  problem_.offsets = nullptr;
  problem_.a_row_index = problem_.b_row_index = nullptr;
  problem_.bias = nullptr;
  problem_.row_scale = nullptr;
  problem_.pre_activation = problem_.scaled_activation = nullptr;
  problem_.score_grad_partials = nullptr;
  problem_.a_scales = problem_.b_scales = nullptr;
}

int Sm90Plan::splits() const {
  if (!has_split_k_twin(config_)) return 1;  // with an op or wide accumulators (constructor)
  if (auto forced = env::split_k()) return std::clamp(*forced, 1, max_split_k(problem_));
  return chosen_splits_;
}

std::size_t Sm90Plan::workspace_bytes() const { return split_k_workspace_bytes(problem_, config_, splits()); }

KernelProblem Sm90Plan::bind(const Arguments& args) const {
  KernelProblem p = problem_;
  p.a = &operand_a(args);
  p.b = &operand_b(args);
  p.out = &operand_out(args);
  if (const auto* g = std::get_if<GroupedGemmArguments>(&args)) {
    p.offsets = static_cast<const int32_t*>(g->offsets.data);
    if (g->a_row_index) p.a_row_index = static_cast<const int32_t*>(g->a_row_index->data);
    if (g->a_k_index) p.a_row_index = static_cast<const int32_t*>(g->a_k_index->data);
    if (g->b_k_index) p.b_row_index = static_cast<const int32_t*>(g->b_k_index->data);
  }
  bind_epilogue(epilogue_ops(args), &p);
  bind_fp8_scales(args, &p);
  return p;
}

Result<LaunchShape> Sm90Plan::launch_shape(const KernelProblem& bound, const cuda::LazyModule& module,
                                           const std::string& lowered_name, int splits) const {
  const int ordinal = bound.a->device.index;
  const int max_sms = env::max_sms().value_or(0);
  {
    std::lock_guard lock(mutex_);
    for (const KnownLaunch& k : launches_)
      if (k.ordinal == ordinal && k.module == &module && k.splits == splits && k.max_sms == max_sms) return k.shape;
  }
  GEMMOPS_ASSIGN_OR_RETURN(LaunchShape shape, prepare_launch(bound, config_, module, lowered_name, splits));
  std::lock_guard lock(mutex_);
  launches_.push_back({ordinal, &module, splits, max_sms, shape});
  return shape;
}

}  // namespace gemmops::sm90
