// src/cuda/launch.hpp: one kernel launch through cuLaunchKernelEx (grid, block, smem, cluster)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda.h>

#include "cuda/driver_api.hpp"
#include "gemmops/status.hpp"

namespace gemmops::cuda {

/// How to launch: grid in blocks, block in threads, dynamic shared memory, thread-block cluster.
struct LaunchConfig {
  unsigned grid[3]{1, 1, 1};
  unsigned block[3]{1, 1, 1};
  unsigned smem_bytes = 0;  ///< dynamic shared memory per block
  unsigned cluster[3]{1, 1, 1};
  CUstream stream = nullptr;
  /// Programmatic dependent launch: the kernel may start while the stream's previous kernel is still
  /// running (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION); only for a kernel that waits for
  /// it (griddepcontrol.wait) before it touches global memory.
  bool programmatic_serialization = false;
};

/// The launch attributes a config can need: the cluster shape, programmatic serialization.
inline constexpr int kMaxLaunchAttributes = 2;

/// The dynamic smem a function may use without opting in (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES).
inline constexpr unsigned kDefaultSmemLimit = 48 * 1024;
/// The largest cluster the driver allows without CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED.
inline constexpr unsigned kPortableClusterSize = 8;

/// Launches `fn` asynchronously on config.stream; never synchronises. Raises the function's
/// dynamic smem limit when smem_bytes > 48 KiB and allows a non-portable cluster when it has more
/// than 8 blocks (each once per function, cached), and passes the cluster shape as a launch attribute
/// when it is not 1x1x1 (and programmatic serialization when the config asks for it). The current
/// context must be the function's (see make_current).
/// invalid_argument for a zero extent or a grid that is not a multiple of the cluster; driver_error.
Status launch(const DriverApi& api, CUfunction fn, const LaunchConfig& config, void** kernel_params);

/// The driver's form of `config`. Its attributes (the cluster shape when it is not 1x1x1,
/// programmatic serialization when asked for) are written to `attrs`, which the returned config
/// points at (keep it alive while the config is used).
CUlaunchConfig to_driver_config(const LaunchConfig& config, CUlaunchAttribute (&attrs)[kMaxLaunchAttributes]);

/// What launch() does to `fn` before the first launch of `config`'s shape: raises its dynamic smem
/// limit above 48 KiB and allows non-portable clusters as needed (once per function, cached).
Status prepare_function(const DriverApi& api, CUfunction fn, const LaunchConfig& config);

/// Drops what launch() cached about `fn` (called when its module unloads: handles get reused).
void forget_launch_attributes(CUfunction fn);

}  // namespace gemmops::cuda
