// tests/support/scoped_env.hpp: GEMMOPS_* environment variables set for one scope, then restored
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gemmops::testing {

/// Sets each (name, value) pair whose value is not null; unsets them when the scope ends.
struct ScopedEnv {
  /// Each variable set here and the value it had before (nullopt: unset), restored on destruction:
  /// a test that sets a variable the whole run sets (GEMMOPS_TRIAL_DESIGNS=1) must not unset it
  /// for the tests after it.
  std::vector<std::pair<std::string, std::optional<std::string>>> saved;
  ScopedEnv(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const auto& [name, value] : vars) {
      if (value == nullptr) continue;
      const char* before = std::getenv(name);
      saved.emplace_back(name, before != nullptr ? std::optional<std::string>(before) : std::nullopt);
      ::setenv(name, value, 1);
    }
  }
  ~ScopedEnv() {
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
      if (it->second) {
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      } else {
        ::unsetenv(it->first.c_str());
      }
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
};

}  // namespace gemmops::testing
