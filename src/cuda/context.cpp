// src/cuda/context.cpp: primary contexts, retained once per device and kept for the process
// SPDX-License-Identifier: Apache-2.0
#include "cuda/context.hpp"

#include <mutex>
#include <string>
#include <unordered_map>

#include "cuda/driver_api.hpp"

namespace gemmops::cuda {
namespace {

// Retained contexts are never released: a primary context lives as long as the process uses the
// device, and releasing at exit races with the driver's own teardown.
struct ContextCache {
  std::mutex mutex;
  std::uint64_t generation = 0;
  std::unordered_map<int, CUcontext> primary;
  std::unordered_map<int, CUcontext> last_verified;  // the last context seen current on the device
};

ContextCache& cache() {
  static ContextCache c;
  return c;
}

Result<CUcontext> retain_primary(const DriverApi& api, CUdevice device, int ordinal) {
  ContextCache& c = cache();
  std::lock_guard lock(c.mutex);
  if (c.generation != driver_generation()) {
    c.primary.clear();
    c.last_verified.clear();
    c.generation = driver_generation();
  }
  if (auto it = c.primary.find(ordinal); it != c.primary.end()) return it->second;
  CUcontext ctx = nullptr;
  GEMMOPS_CU(api, cuDevicePrimaryCtxRetain, &ctx, device);
  c.primary.emplace(ordinal, ctx);
  return ctx;
}

// Whether `ctx` is known to belong to device `ordinal` (a context never changes its device).
bool known_context_of(int ordinal, CUcontext ctx) {
  ContextCache& c = cache();
  std::lock_guard lock(c.mutex);
  if (c.generation != driver_generation()) return false;
  auto it = c.last_verified.find(ordinal);
  return it != c.last_verified.end() && it->second == ctx;
}

void remember_context_of(int ordinal, CUcontext ctx) {
  ContextCache& c = cache();
  std::lock_guard lock(c.mutex);
  if (c.generation == driver_generation()) c.last_verified[ordinal] = ctx;
}

}  // namespace

Status check_ordinal(int ordinal) {
  GEMMOPS_ASSIGN_OR_RETURN(const DriverApi* api, driver());
  int count = 0;
  GEMMOPS_CU(*api, cuDeviceGetCount, &count);
  if (ordinal < 0 || ordinal >= count)
    return no_device("device " + std::to_string(ordinal) + ": not present; " + std::to_string(count) +
                     " CUDA device(s) found");
  return Status::ok();
}

Result<CUcontext> current_context(int ordinal) {
  GEMMOPS_ASSIGN_OR_RETURN(const DriverApi* api, driver());
  CUcontext ctx = nullptr;
  // Every launch asks: when the current context is one already seen on this device (torch's
  // primary context, say), one driver call answers.
  GEMMOPS_CU(*api, cuCtxGetCurrent, &ctx);
  if (ctx != nullptr && known_context_of(ordinal, ctx)) return ctx;
  GEMMOPS_TRY(check_ordinal(ordinal));
  CUdevice device = 0;
  GEMMOPS_CU(*api, cuDeviceGet, &device, ordinal);
  if (ctx != nullptr) {
    CUdevice current = -1;
    GEMMOPS_CU(*api, cuCtxGetDevice, &current);
    if (current == device) {
      remember_context_of(ordinal, ctx);
      return ctx;
    }
  }
  GEMMOPS_ASSIGN_OR_RETURN(CUcontext primary, retain_primary(*api, device, ordinal));
  GEMMOPS_CU(*api, cuCtxSetCurrent, primary);
  remember_context_of(ordinal, primary);
  return primary;
}

CUcontext thread_context() {
  auto api = driver();
  CUcontext ctx = nullptr;
  if (!api || (*api)->cuCtxGetCurrent == nullptr || (*api)->cuCtxGetCurrent(&ctx) != CUDA_SUCCESS) return nullptr;
  return ctx;
}

Status adopt_context(CUcontext ctx) {
  if (ctx == nullptr) return Status::ok();
  GEMMOPS_ASSIGN_OR_RETURN(const DriverApi* api, driver());
  GEMMOPS_CU(*api, cuCtxSetCurrent, ctx);
  return Status::ok();
}

Status make_current(int ordinal) { return current_context(ordinal).status(); }

}  // namespace gemmops::cuda
