// src/core/log.cpp: the library's one logger, silent unless GEMMOPS_LOG=1
// SPDX-License-Identifier: Apache-2.0
#include "core/log.hpp"

#include <cstdio>
#include <mutex>

#include "core/env.hpp"

namespace gemmops::detail {

void log(std::string_view message) noexcept {
  try {
    if (!env::log_enabled()) return;
    static auto* mutex = new std::mutex;  // leaked: destructors log during static destruction
    std::lock_guard lock(*mutex);
    std::fprintf(stderr, "gemmops: %.*s\n", static_cast<int>(message.size()), message.data());
  } catch (...) {  // logging must never be the reason a destructor throws
  }
}

}  // namespace gemmops::detail
