// src/jit/nvrtc_api.hpp: NVRTC as a table of function pointers, opened at run time
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <nvrtc.h>  // types only: nothing links libnvrtc

#include <string>

#include "gemmops/status.hpp"

namespace gemmops::jit {

#define GEMMOPS_NVRTC_FUNCTIONS(X)                                                              \
  X(nvrtcGetErrorString) X(nvrtcVersion) X(nvrtcCreateProgram) X(nvrtcDestroyProgram)          \
  X(nvrtcCompileProgram) X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN) X(nvrtcGetPTXSize) X(nvrtcGetPTX) \
  X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog) X(nvrtcAddNameExpression) X(nvrtcGetLoweredName)

/// The NVRTC functions gemmops uses, and which library they came from.
struct NvrtcApi {
#define GEMMOPS_NVRTC_FIELD(name) decltype(&::name) name = nullptr;
  GEMMOPS_NVRTC_FUNCTIONS(GEMMOPS_NVRTC_FIELD)
#undef GEMMOPS_NVRTC_FIELD
  int major = 0;         ///< nvrtcVersion
  int minor = 0;
  std::string library;   ///< the name or path that dlopen accepted

  /// "13.0".
  std::string version() const { return std::to_string(major) + "." + std::to_string(minor); }
};

/// The process's NVRTC, opened once (thread-safe): GEMMOPS_NVRTC if set (and only it), else
/// libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so, then the same names in the toolkit found at build
/// time. compile_failed naming every attempt and the loader's words when none opens.
Result<const NvrtcApi*> nvrtc();

/// ok for NVRTC_SUCCESS, else compile_failed "<call>: <nvrtcGetErrorString>".
Status check(const NvrtcApi& api, nvrtcResult result, const char* call);

}  // namespace gemmops::jit
