// src/cuda/driver_api.cpp: dlopen("libcuda.so.1") once and fill the DriverApi table
// SPDX-License-Identifier: Apache-2.0
#include "cuda/driver_api.hpp"

#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <atomic>
#include <string>
#include <type_traits>

namespace gemmops::cuda {
namespace {

#define GEMMOPS_STR_INNER(x) #x
#define GEMMOPS_STR(x) GEMMOPS_STR_INNER(x)

using GetProcAddressV2 = CUresult (*)(const char*, void**, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult*);
using GetProcAddressV1 = CUresult (*)(const char*, void**, int, cuuint64_t);

// The version asked of cuGetProcAddress must give the ABI of the field it fills ("##" keeps `name`
// unexpanded: PFN_cuMemAlloc_v3020, not PFN_cuMemAlloc_v2_v3020).
#define GEMMOPS_DRIVER_ABI_CHECK(name, version)                                       \
  static_assert(std::is_same_v<decltype(&::name), PFN_##name##_v##version>,           \
                #name ": the version in GEMMOPS_DRIVER_FUNCTIONS does not match cuda.h");
GEMMOPS_DRIVER_FUNCTIONS(GEMMOPS_DRIVER_ABI_CHECK)
#undef GEMMOPS_DRIVER_ABI_CHECK

struct Loaded {
  DriverApi api;
  Status status;
};

// Prefers cuGetProcAddress so that each function comes in the ABI version of its field (the driver
// exports several, e.g. cuMemAlloc and cuMemAlloc_v2), then dlsym of the versioned symbol.
void* resolve(void* lib, GetProcAddressV2 gpa2, GetProcAddressV1 gpa1, const char* base, int version,
              const char* versioned) {
  void* fn = nullptr;
  if (gpa2 != nullptr) {
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (gpa2(base, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found) == CUDA_SUCCESS &&
        found == CU_GET_PROC_ADDRESS_SUCCESS && fn != nullptr)
      return fn;
  } else if (gpa1 != nullptr) {
    if (gpa1(base, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM) == CUDA_SUCCESS &&
        fn != nullptr)
      return fn;
  }
  return dlsym(lib, versioned);
}

std::string error_words(const DriverApi& api, CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName == nullptr || api.cuGetErrorName(r, &name) != CUDA_SUCCESS) name = nullptr;
  if (api.cuGetErrorString == nullptr || api.cuGetErrorString(r, &text) != CUDA_SUCCESS) text = nullptr;
  std::string out = name != nullptr ? name : "CUDA error " + std::to_string(static_cast<int>(r));
  if (text != nullptr) out += std::string(" (") + text + ")";
  return out;
}

Loaded load() {
  Loaded out;
  // Never closed: the driver stays loaded for the life of the process (others share it anyway).
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    out.status = no_device(std::string("no CUDA driver: ") + (why != nullptr ? why : "libcuda.so.1 not found"));
    return out;
  }
  auto gpa2 = reinterpret_cast<GetProcAddressV2>(dlsym(lib, "cuGetProcAddress_v2"));
  auto gpa1 = gpa2 != nullptr ? nullptr : reinterpret_cast<GetProcAddressV1>(dlsym(lib, "cuGetProcAddress"));
  DriverApi& api = out.api;
#define GEMMOPS_DRIVER_RESOLVE(name, version) \
  api.name = reinterpret_cast<decltype(api.name)>(resolve(lib, gpa2, gpa1, #name, version, GEMMOPS_STR(name)));
  GEMMOPS_DRIVER_FUNCTIONS(GEMMOPS_DRIVER_RESOLVE)
#undef GEMMOPS_DRIVER_RESOLVE
  if (api.cuInit == nullptr) {
    out.status = no_device("no CUDA driver: libcuda.so.1 has no cuInit");
    return out;
  }
  CUresult r = api.cuInit(0);
  if (r != CUDA_SUCCESS) {
    out.status = no_device("no CUDA driver: cuInit: " + error_words(api, r));
    return out;
  }
  if (api.cuDriverGetVersion != nullptr && api.cuDriverGetVersion(&api.driver_version) != CUDA_SUCCESS)
    api.driver_version = 0;
  return out;
}

std::atomic<const DriverApi*> g_injected{nullptr};
std::atomic<std::uint64_t> g_generation{0};

}  // namespace

Result<const DriverApi*> driver() {
  if (const DriverApi* fake = g_injected.load(std::memory_order_acquire)) return fake;
  static const Loaded loaded = load();  // C++11 statics: loaded once, thread-safe
  if (!loaded.status) return loaded.status;
  return &loaded.api;
}

void set_driver_for_testing(const DriverApi* api) {
  g_injected.store(api, std::memory_order_release);
  g_generation.fetch_add(1, std::memory_order_acq_rel);
}

std::uint64_t driver_generation() { return g_generation.load(std::memory_order_acquire); }

Status check(const DriverApi& api, CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return Status::ok();
  std::string message = std::string(call) + ": " + error_words(api, result);
  if (result == CUDA_ERROR_OUT_OF_MEMORY) return {ErrorCode::out_of_memory, std::move(message)};
  return driver_error(std::move(message));
}

}  // namespace gemmops::cuda
