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

/// Launches the persistent kernel on `stream` (asynchronous, no host sync). Nothing is launched
/// when the problem has no rows, no columns or no groups.
Status launch_grouped(const KernelProblem& p, const KernelConfig& c, const cuda::LazyModule& module,
                      const std::string& lowered_name, Stream stream);

}  // namespace gemmops::sm90
