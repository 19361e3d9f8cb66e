// src/cuda/driver_api.hpp: the CUDA driver as a table of function pointers, loaded at run time
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda.h>  // types only: nothing links libcuda

#include <cstdint>

#include "gemmops/status.hpp"

namespace gemmops::cuda {

// X(name): one entry per driver function. `name` may be a cuda.h macro (cuMemAlloc -> cuMemAlloc_v2):
// the field then carries the versioned name, #name is the base name cuGetProcAddress expects and
// the expanded name is the versioned symbol dlsym falls back to.
#define GEMMOPS_DRIVER_FUNCTIONS(X)                                                              \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetAttribute)     \
  X(cuDeviceGetName) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxGetCurrent) \
  X(cuCtxSetCurrent) X(cuCtxGetDevice) X(cuCtxSynchronize) X(cuModuleLoadData)                   \
  X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncSetAttribute) X(cuFuncGetAttribute)          \
  X(cuLaunchKernelEx) X(cuOccupancyMaxActiveClusters) X(cuMemAlloc) X(cuMemFree)                 \
  X(cuMemGetInfo) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync)      \
  X(cuMemsetD8) X(cuMemsetD8Async) X(cuStreamSynchronize) X(cuEventCreate) X(cuEventRecord)      \
  X(cuEventSynchronize) X(cuEventElapsedTime) X(cuEventDestroy) X(cuTensorMapEncodeTiled)        \
  X(cuGetErrorName) X(cuGetErrorString) X(cuPointerGetAttribute)

/// The driver functions gemmops uses. A plain value: tests fill one with fakes. A null entry means
/// the driver lacks that function (calls to it are reported, not made).
struct DriverApi {
#define GEMMOPS_DRIVER_FIELD(name) decltype(&::name) name = nullptr;
  GEMMOPS_DRIVER_FUNCTIONS(GEMMOPS_DRIVER_FIELD)
#undef GEMMOPS_DRIVER_FIELD
  int driver_version = 0;  ///< cuDriverGetVersion, e.g. 12080; 0 when unknown
};

/// The process's driver: opens libcuda.so.1 once (thread-safe), resolves the table through
/// cuGetProcAddress for CUDA_VERSION and calls cuInit(0). no_device with the loader's or cuInit's
/// words when there is no usable driver ("no CUDA driver: libcuda.so.1: cannot open ...").
/// Returns the injected table instead while set_driver_for_testing is in force.
Result<const DriverApi*> driver();

/// Replaces the driver returned by driver() (nullptr restores the real one) and invalidates every
/// cache of this layer (contexts, device facts, launch attributes). Not for concurrent use.
void set_driver_for_testing(const DriverApi* api);

/// Increases on every set_driver_for_testing; caches keyed by driver compare it.
std::uint64_t driver_generation();

/// ok for CUDA_SUCCESS; otherwise "cuModuleLoadData: CUDA_ERROR_INVALID_IMAGE (device kernel image
/// is invalid)" as driver_error, or out_of_memory for CUDA_ERROR_OUT_OF_MEMORY.
Status check(const DriverApi& api, CUresult result, const char* call);

}  // namespace gemmops::cuda

/// GEMMOPS_CU(api, cuMemAlloc, &ptr, bytes): calls api.cuMemAlloc(&ptr, bytes) and returns its
/// Status from the enclosing function when it fails (also when the driver lacks the function).
#define GEMMOPS_CU(api, fn, ...)                                                        \
  do {                                                                                  \
    const ::gemmops::cuda::DriverApi& gemmops_cu_api_ = (api);                          \
    if (gemmops_cu_api_.fn == nullptr)                                                  \
      return ::gemmops::driver_error(#fn ": not provided by this CUDA driver");         \
    GEMMOPS_TRY(::gemmops::cuda::check(gemmops_cu_api_, gemmops_cu_api_.fn(__VA_ARGS__), #fn)); \
  } while (0)
