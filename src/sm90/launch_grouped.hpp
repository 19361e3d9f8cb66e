// src/sm90/launch_grouped.hpp: builds the kernel's parameters (TMA descriptors, sizes) and launches it
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

#include "cuda/module.hpp"
#include "gemmops/operator.hpp"
#include "sm90/kernel_config.hpp"
#include "sm90/kernel_problem.hpp"
#include "sm90/params.cuh"

namespace gemmops::sm90 {

/// The parameters of one launch; invalid_argument/driver_error when a tensor map cannot be encoded.
Result<kernels::sm90::GroupedGemmParams> make_params(const KernelProblem& p, const KernelConfig& c);

/// Scheduler units (tiles of one cluster) the problem can have at most: the exact count needs the
/// device-side offsets, and every group with rows adds at most one partial unit.
int64_t max_scheduler_units(const KernelProblem& p, const KernelConfig& c);

/// Workspace bytes a launch with K split `splits` ways needs (0 when not split): one flag and
/// splits - 1 fp32 partials per warpgroup slot of every possible unit.
std::size_t split_k_workspace_bytes(const KernelProblem& p, const KernelConfig& c, int splits);

/// Launches the persistent kernel on `stream` (asynchronous, no host sync): once, or once per chunk
/// of groups when the problem has more groups than one launch's scheduler table holds. Nothing is
/// launched when the problem has no rows, no columns or no groups (and no zero tail). With
/// splits > 1, `workspace` must hold split_k_workspace_bytes(); its flags are cleared on the
/// stream before each launch.
Status launch_grouped(const KernelProblem& p, const KernelConfig& c, const cuda::LazyModule& module,
                      const std::string& lowered_name, Stream stream, int splits = 1, Workspace workspace = {});

}  // namespace gemmops::sm90
