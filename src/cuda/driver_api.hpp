// src/cuda/driver_api.hpp: the CUDA driver as a table of function pointers, loaded at run time
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda.h>  // types only: nothing links libcuda

#include <cstdint>

#include "gemmops/status.hpp"

namespace gemmops::cuda {

// X(name, version): one entry per driver function; `version` is the CUDA version whose ABI matches
// the prototype in cuda.h, asked of cuGetProcAddress. It is not always CUDA_VERSION: CUDA 13 gave
// cuCtxSynchronize and cuCtxGetDevice new parameters under their old names. driver_api.cpp checks
// every entry against cudaTypedefs.h at compile time. `name` may be a cuda.h macro (cuMemAlloc ->
// cuMemAlloc_v2): the field then carries the versioned name, #name is the base name that
// cuGetProcAddress expects and the expanded name is the symbol dlsym falls back to.
#define GEMMOPS_DRIVER_FUNCTIONS(X)                                                                 \
  X(cuInit, 2000) X(cuDriverGetVersion, 2020) X(cuDeviceGet, 2000) X(cuDeviceGetCount, 2000)        \
  X(cuDeviceGetAttribute, 2000) X(cuDeviceGetName, 2000) X(cuDevicePrimaryCtxRetain, 7000)          \
  X(cuDevicePrimaryCtxRelease, 11000) X(cuCtxGetCurrent, 4000) X(cuCtxSetCurrent, 4000)             \
  X(cuCtxGetDevice, 2000) X(cuCtxSynchronize, 2000) X(cuModuleLoadData, 2000)                      \
  X(cuModuleUnload, 2000) X(cuModuleGetFunction, 2000) X(cuFuncSetAttribute, 9000)                  \
  X(cuFuncGetAttribute, 2020) X(cuLaunchKernelEx, 11060) X(cuOccupancyMaxActiveClusters, 11070)     \
  X(cuMemAlloc, 3020) X(cuMemFree, 3020) X(cuMemGetInfo, 3020) X(cuMemcpyHtoD, 3020)                \
  X(cuMemcpyDtoH, 3020) X(cuMemcpyHtoDAsync, 3020) X(cuMemcpyDtoHAsync, 3020) X(cuMemsetD8, 3020)   \
  X(cuMemsetD8Async, 3020) X(cuStreamSynchronize, 2000) X(cuEventCreate, 2000)                      \
  X(cuEventRecord, 2000) X(cuEventQuery, 2000) X(cuEventSynchronize, 2000) X(cuEventElapsedTime, 12080)                   \
  X(cuEventDestroy, 4000) X(cuTensorMapEncodeTiled, 12000) X(cuGetErrorName, 6000)                  \
  X(cuGetErrorString, 6000) X(cuPointerGetAttribute, 4000)

/// The driver functions gemmops uses. A plain value: tests fill one with fakes. A null entry means
/// the driver lacks that function (calls to it are reported, not made).
struct DriverApi {
#define GEMMOPS_DRIVER_FIELD(name, version) decltype(&::name) name = nullptr;
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
