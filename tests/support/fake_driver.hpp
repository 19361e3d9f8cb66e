// tests/support/fake_driver.hpp: a CUDA driver made of host functions that record what they are asked
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "cuda/driver_api.hpp"

namespace gemmops::testing {

struct FakeDevice {
  int cc = 90;
  std::string name = "NVIDIA H200";
  int sm_count = 132;
  int smem_optin = 232448;
  int l2_bytes = 50331648;
  int clock_khz = 1980000;
  int memory_clock_khz = 3201000;  // x 2 x 6144 bits: 4.9 TB/s
  int memory_bus_bits = 6144;
};

struct RecordedLaunch {
  CUfunction fn = nullptr;
  CUlaunchConfig config{};
  std::vector<CUlaunchAttribute> attrs;
};

struct RecordedAttribute {
  CUfunction fn = nullptr;
  CUfunction_attribute attr{};
  int value = 0;
};

/// Everything the fake knows and saw. Reset by ScopedFakeDriver.
struct FakeDriverState {
  std::vector<FakeDevice> devices{FakeDevice{}};
  CUcontext current = nullptr;  // fake contexts are 0x1000 + ordinal
  int retains = 0;
  int set_current = 0;
  int module_loads = 0;
  int module_unloads = 0;
  int get_function_calls = 0;
  CUresult load_result = CUDA_SUCCESS;
  CUresult alloc_result = CUDA_SUCCESS;
  CUresult launch_result = CUDA_SUCCESS;
  std::map<std::string, CUfunction> functions;  // names the fake modules contain
  std::vector<RecordedAttribute> attributes;
  std::vector<RecordedLaunch> launches;
  int live_allocations = 0;
};

inline FakeDriverState& fake_state() {
  static FakeDriverState s;
  return s;
}

inline CUcontext fake_context(int ordinal) { return reinterpret_cast<CUcontext>(std::uintptr_t{0x1000} + ordinal); }

inline cuda::DriverApi make_fake_driver() {
  cuda::DriverApi api;
  api.driver_version = 13000;
  api.cuInit = [](unsigned) { return CUDA_SUCCESS; };
  api.cuGetErrorName = [](CUresult r, const char** s) {
    switch (r) {
      case CUDA_ERROR_INVALID_IMAGE: *s = "CUDA_ERROR_INVALID_IMAGE"; return CUDA_SUCCESS;
      case CUDA_ERROR_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
      case CUDA_ERROR_NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; return CUDA_SUCCESS;
      case CUDA_ERROR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
      default: return CUDA_ERROR_INVALID_VALUE;
    }
  };
  api.cuGetErrorString = [](CUresult r, const char** s) {
    switch (r) {
      case CUDA_ERROR_INVALID_IMAGE: *s = "device kernel image is invalid"; return CUDA_SUCCESS;
      case CUDA_ERROR_OUT_OF_MEMORY: *s = "out of memory"; return CUDA_SUCCESS;
      case CUDA_ERROR_NOT_FOUND: *s = "named symbol not found"; return CUDA_SUCCESS;
      case CUDA_ERROR_INVALID_VALUE: *s = "invalid argument"; return CUDA_SUCCESS;
      default: return CUDA_ERROR_INVALID_VALUE;
    }
  };
  api.cuDeviceGetCount = [](int* n) { *n = static_cast<int>(fake_state().devices.size()); return CUDA_SUCCESS; };
  api.cuDeviceGet = [](CUdevice* d, int ordinal) {
    if (ordinal < 0 || ordinal >= static_cast<int>(fake_state().devices.size())) return CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return CUDA_SUCCESS;
  };
  api.cuDeviceGetAttribute = [](int* v, CUdevice_attribute a, CUdevice d) {
    const FakeDevice& dev = fake_state().devices.at(static_cast<std::size_t>(d));
    switch (a) {
      case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = dev.cc / 10; break;
      case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = dev.cc % 10; break;
      case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = dev.sm_count; break;
      case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = dev.smem_optin; break;
      case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = dev.l2_bytes; break;
      case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *v = dev.clock_khz; break;
      case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *v = dev.memory_clock_khz; break;
      case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *v = dev.memory_bus_bits; break;
      default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
  };
  api.cuDeviceGetName = [](char* name, int len, CUdevice d) {
    std::strncpy(name, fake_state().devices.at(static_cast<std::size_t>(d)).name.c_str(), static_cast<std::size_t>(len));
    return CUDA_SUCCESS;
  };
  api.cuDevicePrimaryCtxRetain = [](CUcontext* c, CUdevice d) { ++fake_state().retains; *c = fake_context(d); return CUDA_SUCCESS; };
  api.cuCtxGetCurrent = [](CUcontext* c) { *c = fake_state().current; return CUDA_SUCCESS; };
  api.cuCtxSetCurrent = [](CUcontext c) { ++fake_state().set_current; fake_state().current = c; return CUDA_SUCCESS; };
  api.cuCtxGetDevice = [](CUdevice* d) {
    if (fake_state().current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    *d = static_cast<CUdevice>(reinterpret_cast<std::uintptr_t>(fake_state().current) - 0x1000);
    return CUDA_SUCCESS;
  };
  api.cuCtxSynchronize = []() { return CUDA_SUCCESS; };
  api.cuStreamSynchronize = [](CUstream) { return CUDA_SUCCESS; };
  api.cuModuleLoadData = [](CUmodule* m, const void*) {
    if (fake_state().load_result != CUDA_SUCCESS) return fake_state().load_result;
    *m = reinterpret_cast<CUmodule>(std::uintptr_t{0x2000} + static_cast<std::uintptr_t>(++fake_state().module_loads));
    return CUDA_SUCCESS;
  };
  api.cuModuleUnload = [](CUmodule) { ++fake_state().module_unloads; return CUDA_SUCCESS; };
  api.cuModuleGetFunction = [](CUfunction* f, CUmodule, const char* name) {
    ++fake_state().get_function_calls;
    auto it = fake_state().functions.find(name);
    if (it == fake_state().functions.end()) return CUDA_ERROR_NOT_FOUND;
    *f = it->second;
    return CUDA_SUCCESS;
  };
  api.cuFuncSetAttribute = [](CUfunction f, CUfunction_attribute a, int v) {
    fake_state().attributes.push_back({f, a, v});
    return CUDA_SUCCESS;
  };
  api.cuLaunchKernelEx = [](const CUlaunchConfig* c, CUfunction f, void**, void**) {
    RecordedLaunch l{f, *c, std::vector<CUlaunchAttribute>(c->attrs, c->attrs + c->numAttrs)};
    l.config.attrs = nullptr;  // points into the caller's stack
    fake_state().launches.push_back(l);
    return fake_state().launch_result;
  };
  // "Device" memory is host memory, so copies can be checked.
  api.cuMemAlloc = [](CUdeviceptr* p, std::size_t bytes) {
    if (fake_state().alloc_result != CUDA_SUCCESS) return fake_state().alloc_result;
    *p = reinterpret_cast<CUdeviceptr>(std::malloc(bytes));
    ++fake_state().live_allocations;
    return CUDA_SUCCESS;
  };
  api.cuMemFree = [](CUdeviceptr p) { std::free(reinterpret_cast<void*>(p)); --fake_state().live_allocations; return CUDA_SUCCESS; };
  api.cuMemcpyHtoD = [](CUdeviceptr d, const void* s, std::size_t n) { std::memcpy(reinterpret_cast<void*>(d), s, n); return CUDA_SUCCESS; };
  api.cuMemcpyDtoH = [](void* d, CUdeviceptr s, std::size_t n) { std::memcpy(d, reinterpret_cast<void*>(s), n); return CUDA_SUCCESS; };
  api.cuMemsetD8 = [](CUdeviceptr d, unsigned char v, std::size_t n) { std::memset(reinterpret_cast<void*>(d), v, n); return CUDA_SUCCESS; };
  api.cuTensorMapEncodeTiled = [](CUtensorMap* m, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                  const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                  CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill) {
    std::memset(m, 0xAB, sizeof(*m));
    return CUDA_SUCCESS;
  };
  return api;
}

/// Installs a fresh fake driver for the scope of a test and restores the real one after.
class ScopedFakeDriver {
 public:
  ScopedFakeDriver() : api_(make_fake_driver()) {
    fake_state() = FakeDriverState{};
    cuda::set_driver_for_testing(&api_);
  }
  ~ScopedFakeDriver() { cuda::set_driver_for_testing(nullptr); }
  ScopedFakeDriver(const ScopedFakeDriver&) = delete;
  ScopedFakeDriver& operator=(const ScopedFakeDriver&) = delete;
  cuda::DriverApi& api() { return api_; }
  FakeDriverState& state() { return fake_state(); }

 private:
  cuda::DriverApi api_;
};

}  // namespace gemmops::testing
