// src/jit/kernel_sources.cpp: lookups over the generated kernel source table
// SPDX-License-Identifier: Apache-2.0
#include "jit/kernel_sources.hpp"

namespace gemmops::jit {

const char* find_kernel_source(std::string_view path) {
  for (const KernelSource& s : kernel_sources())
    if (path == s.path) return s.text;
  return nullptr;
}

}  // namespace gemmops::jit
