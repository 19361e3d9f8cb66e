// src/cuda/launch.cpp: launch assembly; function attributes are set once per function
// SPDX-License-Identifier: Apache-2.0
#include "cuda/launch.hpp"

#include <mutex>
#include <string>
#include <unordered_map>

namespace gemmops::cuda {
namespace {

struct FunctionState {
  unsigned smem_limit = kDefaultSmemLimit;  // what the function has been raised to so far
  bool non_portable_cluster = false;
};

struct AttributeCache {
  std::mutex mutex;
  std::uint64_t generation = 0;
  std::unordered_map<CUfunction, FunctionState> functions;
};

// Leaked on purpose: modules unloading during static destruction still call forget_launch_attributes.
AttributeCache& attribute_cache() {
  static auto* c = new AttributeCache;
  return *c;
}

std::string dims(const unsigned (&d)[3]) {
  return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]);
}

Status validate(const LaunchConfig& c) {
  for (int i = 0; i < 3; ++i) {
    if (c.grid[i] == 0 || c.block[i] == 0 || c.cluster[i] == 0)
      return invalid_argument("launch: grid, block and cluster extents must be positive; got grid " +
                              dims(c.grid) + ", block " + dims(c.block) + ", cluster " + dims(c.cluster));
    if (c.grid[i] % c.cluster[i] != 0)
      return invalid_argument("launch: grid must be a multiple of the cluster in every dimension; got grid " +
                              dims(c.grid) + ", cluster " + dims(c.cluster));
  }
  return Status::ok();
}

// Sets what `fn` still lacks. Holding the lock across the driver calls keeps two threads from
// racing on the same function; these calls are rare (once per function).
Status prepare(const DriverApi& api, CUfunction fn, unsigned smem, bool non_portable) {
  AttributeCache& c = attribute_cache();
  std::lock_guard lock(c.mutex);
  if (c.generation != driver_generation()) {
    c.functions.clear();
    c.generation = driver_generation();
  }
  FunctionState& st = c.functions[fn];
  if (smem > st.smem_limit) {
    GEMMOPS_CU(api, cuFuncSetAttribute, fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
               static_cast<int>(smem));
    st.smem_limit = smem;
  }
  if (non_portable && !st.non_portable_cluster) {
    GEMMOPS_CU(api, cuFuncSetAttribute, fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
    st.non_portable_cluster = true;
  }
  return Status::ok();
}

}  // namespace

CUlaunchConfig to_driver_config(const LaunchConfig& config, CUlaunchAttribute (&attrs)[kMaxLaunchAttributes]) {
  CUlaunchConfig lc{};
  lc.gridDimX = config.grid[0];
  lc.gridDimY = config.grid[1];
  lc.gridDimZ = config.grid[2];
  lc.blockDimX = config.block[0];
  lc.blockDimY = config.block[1];
  lc.blockDimZ = config.block[2];
  lc.sharedMemBytes = config.smem_bytes;
  lc.hStream = config.stream;
  unsigned n = 0;
  if (config.cluster[0] * config.cluster[1] * config.cluster[2] != 1) {
    CUlaunchAttribute& a = attrs[n++] = CUlaunchAttribute{};
    a.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    a.value.clusterDim.x = config.cluster[0];
    a.value.clusterDim.y = config.cluster[1];
    a.value.clusterDim.z = config.cluster[2];
  }
  if (config.programmatic_serialization) {
    CUlaunchAttribute& a = attrs[n++] = CUlaunchAttribute{};
    a.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    a.value.programmaticStreamSerializationAllowed = 1;
  }
  if (n > 0) {
    lc.attrs = attrs;
    lc.numAttrs = n;
  }
  return lc;
}

Status prepare_function(const DriverApi& api, CUfunction fn, const LaunchConfig& config) {
  const unsigned cluster_size = config.cluster[0] * config.cluster[1] * config.cluster[2];
  return prepare(api, fn, config.smem_bytes, cluster_size > kPortableClusterSize);
}

Status launch(const DriverApi& api, CUfunction fn, const LaunchConfig& config, void** kernel_params) {
  if (fn == nullptr) return invalid_argument("launch: function must not be null");
  GEMMOPS_TRY(validate(config));
  GEMMOPS_TRY(prepare_function(api, fn, config));

  CUlaunchAttribute attrs[kMaxLaunchAttributes]{};
  const CUlaunchConfig lc = to_driver_config(config, attrs);
  GEMMOPS_CU(api, cuLaunchKernelEx, &lc, fn, kernel_params, nullptr);
  return Status::ok();
}

void forget_launch_attributes(CUfunction fn) {
  AttributeCache& c = attribute_cache();
  std::lock_guard lock(c.mutex);
  c.functions.erase(fn);
}

}  // namespace gemmops::cuda
