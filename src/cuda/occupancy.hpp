// src/cuda/occupancy.hpp: how many clusters of a launch can be resident at once
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda.h>

#include "cuda/driver_api.hpp"
#include "cuda/launch.hpp"
#include "gemmops/status.hpp"

namespace gemmops::cuda {

/// The most clusters of config.cluster (and config.block, config.smem_bytes) the device can hold
/// at once. A persistent grid must not exceed it: clusters need their CTAs in one GPC, and GPCs
/// with an odd free SM leave it unused, so SMs / cluster size can be too many. Raises the
/// function's smem limit first (as launch() does). Cached per function and shape.
Result<int> max_active_clusters(const DriverApi& api, CUfunction fn, const LaunchConfig& config);

}  // namespace gemmops::cuda
