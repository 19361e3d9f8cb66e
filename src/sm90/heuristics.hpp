// src/sm90/heuristics.hpp: a roofline estimate of a design's run time, which orders get_operators()
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "sm90/designs.hpp"
#include "sm90/kernel_problem.hpp"
#include "sm90/machine_model.hpp"

namespace gemmops::sm90 {

/// The split-K factor that estimate chose (1: none) and its time.
struct SplitKChoice {
  int splits = 1;
  double us = 0;
};

/// The expected number of `unit`-row units of a group whose row count is routing's: mean `mean`, its
/// noise a Poisson's below 32 rows and a normal's of sd sqrt(mean) above, never below 0 rows; and the
/// share of such groups that have rows at all, in `nonempty`.
double expected_units_of_routed_group(double mean, double unit, double& nonempty);

/// Estimated microseconds for `p` on the part `m` models, with the best split of K (M-grouped forms
/// only; a split must gain 10% to be chosen), using `d`'s calibration as given (calibrated_for()
/// picks the part's). Pure: no device query; the caller chooses the model (machine_of_device.hpp).
/// Group sizes are unknown on the host (device offsets), so grouped problems are estimated under
/// balanced (balanced_sizes_of()) and skewed sizes and the two estimates' geometric mean is used.
/// The balanced leg's group sizes: routed where A's rows are gathered (a row index is the MoE
/// routing's, whose counts are never whole units), else the model's balanced_sizes.
GroupSizes balanced_sizes_of(const KernelProblem& p, const MachineModel& m);
SplitKChoice choose_split_k(const KernelProblem& p, const Sm90Design& d, const MachineModel& m);
double estimate_time_us(const KernelProblem& p, const Sm90Design& d, const MachineModel& m);
/// The estimate with K split `splits` ways (1: not split).
double estimate_time_us(const KernelProblem& p, const Sm90Design& d, const MachineModel& m, int splits);
/// The estimate under one assumption about the group sizes.
double estimate_time_us(const KernelProblem& p, const Sm90Design& d, const MachineModel& m, int splits,
                        GroupSizes sizes);
/// The most ways K may be split: every unit keeps at least kMinSplitKBlocks k-blocks, so its
/// pipeline still fills; 1 for the K-grouped form.
int max_split_k(const KernelProblem& p);
inline constexpr int kMinSplitKBlocks = 4;
inline constexpr int kMaxSplitK = 8;

}  // namespace gemmops::sm90
