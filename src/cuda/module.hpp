// src/cuda/module.hpp: a cubin loaded into one device's context, and its functions by lowered name
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "gemmops/status.hpp"

namespace gemmops::cuda {

/// A loaded module. Belongs to the context it was loaded in (the primary context of `ordinal`):
/// a module loaded for device 0 must not be used on device 1. Unloads on destruction; a failure
/// there is logged, never thrown. Thread-safe.
class Module {
 public:
  /// Makes device `ordinal` current and loads `cubin`. driver_error (e.g. CUDA_ERROR_INVALID_IMAGE,
  /// CUDA_ERROR_UNSUPPORTED_PTX_VERSION when the driver is older than the compiler), no_device.
  static Result<std::shared_ptr<Module>> load(const std::string& cubin, int ordinal);

  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// The kernel named `lowered_name` (a mangled name from NVRTC, or an extern "C" name); looked up
  /// once, then cached. driver_error (CUDA_ERROR_NOT_FOUND) when the module has no such kernel.
  Result<CUfunction> function(const std::string& lowered_name) const;

  int ordinal() const { return ordinal_; }
  CUmodule handle() const { return module_; }

 private:
  Module(CUmodule module, CUcontext context, int ordinal)
      : module_(module), context_(context), ordinal_(ordinal) {}

  CUmodule module_;
  CUcontext context_;
  int ordinal_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, CUfunction, std::less<>> functions_;
};

/// One cubin, loaded lazily into each device it is used on: what an artifact keeps so that the
/// same compiled kernel runs on any device of its target. Thread-safe.
class LazyModule {
 public:
  explicit LazyModule(std::string cubin) : cubin_(std::move(cubin)) {}
  /// The module for device `ordinal`, loading it on first use; errors are not cached.
  Result<std::shared_ptr<Module>> on_device(int ordinal) const;
  /// on_device(ordinal)->function(lowered_name).
  Result<CUfunction> function(int ordinal, const std::string& lowered_name) const;
  const std::string& cubin() const { return cubin_; }

 private:
  std::string cubin_;
  mutable std::mutex mutex_;
  mutable std::map<int, std::shared_ptr<Module>> modules_;
};

}  // namespace gemmops::cuda
