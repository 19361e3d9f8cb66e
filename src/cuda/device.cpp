// src/cuda/device.cpp: device facts and the public device_target / device_supports functions
// SPDX-License-Identifier: Apache-2.0
#include "cuda/device.hpp"

#include <map>
#include <mutex>

#include "core/env.hpp"
#include "cuda/context.hpp"
#include "cuda/driver_api.hpp"

namespace gemmops::cuda {
namespace {

Result<int> attribute(const DriverApi& api, CUdevice_attribute attr, CUdevice device) {
  int value = 0;
  GEMMOPS_CU(api, cuDeviceGetAttribute, &value, attr, device);
  return value;
}

Result<DeviceFacts> query(int ordinal) {
  GEMMOPS_ASSIGN_OR_RETURN(const DriverApi* api, driver());
  GEMMOPS_TRY(check_ordinal(ordinal));
  CUdevice device = 0;
  GEMMOPS_CU(*api, cuDeviceGet, &device, ordinal);
  DeviceFacts f;
  f.ordinal = ordinal;
  GEMMOPS_ASSIGN_OR_RETURN(int major, attribute(*api, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
  GEMMOPS_ASSIGN_OR_RETURN(int minor, attribute(*api, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
  f.cc = major * 10 + minor;
  GEMMOPS_ASSIGN_OR_RETURN(f.sm_count, attribute(*api, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device));
  GEMMOPS_ASSIGN_OR_RETURN(int smem,
                           attribute(*api, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device));
  f.smem_per_block_optin = static_cast<std::size_t>(smem);
  GEMMOPS_ASSIGN_OR_RETURN(int l2, attribute(*api, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, device));
  f.l2_bytes = static_cast<std::size_t>(l2);
  // What the sm90 machine model is chosen by (src/sm90/machine_models.cpp).
  GEMMOPS_ASSIGN_OR_RETURN(f.clock_khz, attribute(*api, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, device));
  GEMMOPS_ASSIGN_OR_RETURN(f.memory_clock_khz, attribute(*api, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, device));
  GEMMOPS_ASSIGN_OR_RETURN(f.memory_bus_bits, attribute(*api, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, device));
  char name[256] = {};
  GEMMOPS_CU(*api, cuDeviceGetName, name, static_cast<int>(sizeof(name)) - 1, device);
  f.name = name;
  return f;
}

// Failures are not cached: a driver error now may be gone later, and it costs nothing to ask again.
struct FactsCache {
  std::mutex mutex;
  std::uint64_t generation = 0;
  std::map<int, DeviceFacts> facts;
};

}  // namespace

Target target_of_cc(int cc) { return Target::sm(cc, cc >= 90); }

// "sm_100a", or "sm_80 or later" for a target that is not arch-specific.
static std::string need_text(const Target& op) {
  return "sm_" + op.to_string() + (op.arch_specific ? "" : " or later");
}

Result<DeviceFacts> device_facts(int ordinal) {
  static FactsCache cache;
  {
    std::lock_guard lock(cache.mutex);
    if (cache.generation != driver_generation()) {
      cache.facts.clear();
      cache.generation = driver_generation();
    }
    if (auto it = cache.facts.find(ordinal); it != cache.facts.end()) return it->second;
  }
  GEMMOPS_ASSIGN_OR_RETURN(DeviceFacts f, query(ordinal));
  std::lock_guard lock(cache.mutex);
  if (cache.generation == driver_generation()) cache.facts.emplace(ordinal, f);
  return f;
}

}  // namespace gemmops::cuda

namespace gemmops {

Result<Target> device_target(int ordinal) {
  GEMMOPS_ASSIGN_OR_RETURN(cuda::DeviceFacts f, cuda::device_facts(ordinal));
  return cuda::target_of_cc(f.cc);
}

Status device_supports(std::string_view target, int ordinal) {
  GEMMOPS_ASSIGN_OR_RETURN(Target op, Target::parse(target));
  if (op.is_cpu()) return Status::ok();
  GEMMOPS_ASSIGN_OR_RETURN(cuda::DeviceFacts f, cuda::device_facts(ordinal));
  Target dev = cuda::target_of_cc(f.cc);
  if (dev.can_run(op)) return Status::ok();
  return no_device("device " + std::to_string(ordinal) + " (" + f.name + ") is sm_" + dev.to_string() +
                   "; operators for " + op.to_string() + " need " + cuda::need_text(op));
}

Status device_or_env_supports(std::string_view target, int ordinal) {
  GEMMOPS_ASSIGN_OR_RETURN(Target op, Target::parse(target));
  if (op.is_cpu()) return Status::ok();
  auto facts = cuda::device_facts(ordinal);
  auto stand_in = env::target();
  // GEMMOPS_TARGET stands in only for an absent device, never for a present one of another kind.
  if (facts || facts.status().code() != ErrorCode::no_device || !stand_in)
    return device_supports(target, ordinal);
  auto env_target = Target::parse(*stand_in);
  if (!env_target)
    return invalid_argument("GEMMOPS_TARGET: must be a target like 90a; got '" + *stand_in + "'");
  if (env_target->can_run(op)) return Status::ok();
  return no_device("GEMMOPS_TARGET=" + *stand_in + " stands in for a device and is sm_" +
                   env_target->to_string() + "; operators for " + op.to_string() + " need " +
                   cuda::need_text(op) + " (" + facts.status().message() + ")");
}

}  // namespace gemmops
