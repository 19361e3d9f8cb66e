// src/simt/arch_modules.cpp: compile on first use per compute capability, keep the result
// SPDX-License-Identifier: Apache-2.0
#include "simt/arch_modules.hpp"

namespace gemmops::simt {

Result<std::shared_ptr<const ArchModule>> ArchModules::for_cc(int cc) const {
  {
    std::lock_guard lock(mutex_);
    if (auto it = by_cc_.find(cc); it != by_cc_.end()) return it->second;
  }
  // Compiled outside the lock: compile_cached makes concurrent callers with one key compile once.
  jit::CompileRequest req = request_;
  req.target = Target::sm(cc);
  GEMMOPS_ASSIGN_OR_RETURN(std::shared_ptr<const jit::CompiledKernel> compiled, jit::compile_cached(req));
  std::lock_guard lock(mutex_);
  auto [it, inserted] = by_cc_.try_emplace(cc, nullptr);
  if (inserted) it->second = std::make_shared<const ArchModule>(std::move(compiled));
  return it->second;
}

}  // namespace gemmops::simt
