// tests/support/scoped_env.hpp: GEMMOPS_* environment variables set for one scope, unset after
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace gemmops::testing {

/// Sets each (name, value) pair whose value is not null; unsets them when the scope ends.
struct ScopedEnv {
  std::vector<std::string> names;
  ScopedEnv(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const auto& [name, value] : vars) {
      if (value == nullptr) continue;
      ::setenv(name, value, 1);
      names.emplace_back(name);
    }
  }
  ~ScopedEnv() {
    for (const std::string& n : names) ::unsetenv(n.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
};

}  // namespace gemmops::testing
