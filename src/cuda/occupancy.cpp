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
  GEMMOPS_TRY(prepare_function(api, fn, config));
  CUlaunchAttribute attrs[kMaxLaunchAttributes]{};
  const CUlaunchConfig lc = to_driver_config(config, attrs);
  int clusters = 0;
  GEMMOPS_CU(api, cuOccupancyMaxActiveClusters, &clusters, fn, &lc);
  std::lock_guard lock(mutex);
  cache[key] = clusters;
  return clusters;
}

}  // namespace gemmops::cuda
