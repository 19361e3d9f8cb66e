// src/simt/arch_modules.hpp: one kernel family compiled for the architecture of each device it runs on
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <map>
#include <memory>
#include <mutex>

#include "cuda/module.hpp"
#include "jit/compile.hpp"

namespace gemmops::simt {

/// A cubin for one compute capability and its module, loaded lazily into each device of it.
struct ArchModule {
  explicit ArchModule(std::shared_ptr<const jit::CompiledKernel> kernel)
      : compiled(std::move(kernel)), module(compiled->cubin) {}
  std::shared_ptr<const jit::CompiledKernel> compiled;
  cuda::LazyModule module;
};

/// A cubin's machine code runs only on the compute capability it was built for (8.0 code runs on
/// 8.x, never on 9.0), and PTX would need a driver at least as new as the compiler. So the same
/// request is compiled once per compute capability it meets, through the JIT caches (key: the
/// request with --gpu-architecture=sm_<cc>). Thread-safe.
class ArchModules {
 public:
  /// `request` without its target: for_cc() sets it.
  explicit ArchModules(jit::CompileRequest request) : request_(std::move(request)) {}

  /// The cubin for compute capability `cc` (e.g. 90 for sm_90), compiled on first use; a failure
  /// (compile_failed with NVRTC's log, or GEMMOPS_NO_JIT without a cached cubin) is not kept.
  Result<std::shared_ptr<const ArchModule>> for_cc(int cc) const;

  const jit::CompileRequest& request() const { return request_; }

 private:
  jit::CompileRequest request_;
  mutable std::mutex mutex_;
  mutable std::map<int, std::shared_ptr<const ArchModule>> by_cc_;
};

}  // namespace gemmops::simt
