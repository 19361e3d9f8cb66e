// src/cuda/occupancy.cpp: cuOccupancyMaxActiveClusters, cached
// SPDX-License-Identifier: Apache-2.0
#include "cuda/occupancy.hpp"

#include <map>
#include <mutex>
#include <tuple>

namespace gemmops::cuda {

Result<int> max_active_clusters(const DriverApi& api, CUfunction fn, const LaunchConfig& config) {
  using Key = std::tuple<CUfunction, unsigned, unsigned, unsigned, std::uint64_t>;
  static std::mutex mutex;
  static std::map<Key, int> cache;
  const unsigned cluster = config.cluster[0] * config.cluster[1] * config.cluster[2];
  const Key key{fn, config.block[0] * config.block[1] * config.block[2], config.smem_bytes, cluster,
                driver_generation()};
  {
    std::lock_guard lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  if (config.smem_bytes > kDefaultSmemLimit)
    GEMMOPS_CU(api, cuFuncSetAttribute, fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
               static_cast<int>(config.smem_bytes));
  CUlaunchConfig lc{};
  lc.gridDimX = config.grid[0];
  lc.gridDimY = config.grid[1];
  lc.gridDimZ = config.grid[2];
  lc.blockDimX = config.block[0];
  lc.blockDimY = config.block[1];
  lc.blockDimZ = config.block[2];
  lc.sharedMemBytes = config.smem_bytes;
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = config.cluster[0];
  attr.value.clusterDim.y = config.cluster[1];
  attr.value.clusterDim.z = config.cluster[2];
  lc.attrs = &attr;
  lc.numAttrs = 1;
  int clusters = 0;
  GEMMOPS_CU(api, cuOccupancyMaxActiveClusters, &clusters, fn, &lc);
  std::lock_guard lock(mutex);
  cache[key] = clusters;
  return clusters;
}

}  // namespace gemmops::cuda
