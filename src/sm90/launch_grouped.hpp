// src/sm90/launch_grouped.hpp: builds the kernel's parameters (TMA descriptors, sizes) and launches it
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <vector>

#include "cuda/module.hpp"
#include "gemmops/operator.hpp"
#include "sm90/kernel_config.hpp"
#include "sm90/group_chunks.hpp"
#include "sm90/kernel_problem.hpp"
#include "sm90/params.cuh"

namespace gemmops::sm90 {

/// The parameters of one launch; invalid_argument/driver_error when a tensor map cannot be encoded.
Result<kernels::sm90::GroupedGemmParams> make_params(const KernelProblem& p, const KernelConfig& c);

/// Scheduler units (tiles of one cluster) the problem can have at most: the exact count needs the
/// device-side offsets, and every group with rows adds at most one partial unit. Reads the form,
/// never the offsets pointer (a plan's problem has none, fake arguments neither).
int64_t max_scheduler_units(const KernelProblem& p, const KernelConfig& c);

/// Workspace bytes a launch with K split `splits` ways needs (0 when not split): one flag and
/// splits - 1 fp32 partials per warpgroup slot of every possible unit.
std::size_t split_k_workspace_bytes(const KernelProblem& p, const KernelConfig& c, int splits);

/// One launch of a problem: a chunk of its groups (all of them unless there are more than the
/// scheduler table holds), the launch's shared memory and persistent grid.
struct ChunkLaunch {
  GroupChunk chunk;
  unsigned smem_bytes = 0;
  int64_t clusters = 0;  ///< resident clusters of the persistent grid
  int raster_band = 1;   ///< computed from the grid (GEMMOPS_RASTER_BAND overrides at launch)
};

/// How a problem's kernel launches on one device: what does not depend on where the data is, found
/// once per (problem layout, device, kernel, K split) and kept by the plan.
struct LaunchShape {
  CUfunction fn = nullptr;
  int ordinal = 0;
  std::vector<ChunkLaunch> chunks;  ///< in launch order; none: nothing to launch
};

/// The device's function and each chunk's shared memory and grid for `p` (whose data pointers are
/// not read): unsupported when a chunk's table needs more shared memory than the device allows, so
/// that a refusal never leaves out half written.
Result<LaunchShape> prepare_launch(const KernelProblem& p, const KernelConfig& c, const cuda::LazyModule& module,
                                   const std::string& lowered_name, int splits);

/// Launches the persistent kernel on `stream` (asynchronous, no host sync), once per chunk of
/// `shape`: the tensor maps from `p`'s data, the rest from `shape`. Nothing is launched when the
/// problem has no rows, no columns or no groups (and no zero tail). With splits > 1, `workspace`
/// must hold split_k_workspace_bytes(); its flags are cleared on the stream before each launch.
/// programmatic: the kernel was compiled to wait for programmatic dependent launch (GEMMOPS_PDL), so it
/// is launched with it, but not after split-K's memset of its flags (a kernel's early start is only
/// ordered after kernels).
Status launch_grouped(const KernelProblem& p, const KernelConfig& c, const LaunchShape& shape, Stream stream,
                      int splits = 1, Workspace workspace = {}, bool programmatic = false);

}  // namespace gemmops::sm90
