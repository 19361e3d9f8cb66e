// src/simt/launch_plan.hpp: valid arguments -> the SIMT kernel's form, parameters and grid (no GPU)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "gemmops/arguments.hpp"
#include "simt/params.cuh"

namespace gemmops::simt {

/// One launch of kernels/simt/grouped_gemm.cuh: which form, its parameters (pointing at the
/// arguments' data) and its grid. `launch` is false when there is nothing to write (no rows, no
/// columns, or no groups and no tail to zero).
struct LaunchPlan {
  kernels::simt::Form form = kernels::simt::Form::dense;
  kernels::simt::SimtParams params{};
  unsigned grid_x = 0, grid_y = 0;
  bool launch = false;
};

/// The kernel's form of an operation kind (gemm and batched_gemm are both `dense`).
kernels::simt::Form form_of(OperationKind kind);

/// Maps valid `args`; unsupported when a size does not fit the kernel's 32-bit indices or the grid.
Result<LaunchPlan> plan_launch(const Arguments& args);

}  // namespace gemmops::simt
