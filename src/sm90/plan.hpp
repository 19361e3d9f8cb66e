// src/sm90/plan.hpp: what the Hopper operator decides once per argument signature (support, kernel,
// K split, estimate, and per device the launch shape), read by supports, estimate, workspace and run
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "core/signature.hpp"
#include "cuda/module.hpp"
#include "sm90/designs.hpp"
#include "sm90/kernel_config.hpp"
#include "sm90/kernel_problem.hpp"
#include "sm90/launch_grouped.hpp"
#include "sm90/machine_model.hpp"

namespace gemmops::sm90 {

/// One design's answers for every argument of one signature. Immutable but for the launch shapes it
/// adds per device and module; thread-safe.
class Sm90Plan {
 public:
  /// Maps `args` (no data is read) and decides, estimating on `model` with its calibration of
  /// `design`: status ok when the design serves them.
  Sm90Plan(const Arguments& args, const Sm90Design& design, DType ab, DType out, const MachineModel& model);
  /// A plan that serves nothing, for `refused` (a machine model that cannot be chosen, say).
  explicit Sm90Plan(Status refused) : status_(std::move(refused)) {}

  const Status& status() const { return status_; }
  /// The problem without data: bind() points it at one call's arguments.
  const KernelProblem& problem() const { return problem_; }
  const KernelConfig& config() const { return config_; }
  double estimate_us() const { return estimate_us_; }
  /// Ways to split K: GEMMOPS_SPLIT_K when set (clamped to what the problem allows), else the
  /// estimate's choice.
  int splits() const;
  std::size_t workspace_bytes() const;

  /// The plan's problem pointing at `args`' tensors (which must have the plan's signature).
  KernelProblem bind(const Arguments& args) const;
  /// The launch shape on `args`' device from `module` with `splits`: found on first use, then kept.
  Result<LaunchShape> launch_shape(const KernelProblem& bound, const cuda::LazyModule& module,
                                   const std::string& lowered_name, int splits) const;

 private:
  struct KnownLaunch {
    int ordinal;
    const cuda::LazyModule* module;
    int splits;
    int max_sms;  // GEMMOPS_MAX_SMS when set, else 0: the grid depends on it
    LaunchShape shape;
  };

  Status status_;
  KernelProblem problem_;
  KernelConfig config_{};
  int chosen_splits_ = 1;
  double estimate_us_ = 1e30;
  mutable std::mutex mutex_;
  mutable std::vector<KnownLaunch> launches_;
};

}  // namespace gemmops::sm90
