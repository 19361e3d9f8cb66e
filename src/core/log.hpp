// src/core/log.hpp: the library's one logger, silent unless GEMMOPS_LOG=1
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string_view>

namespace gemmops::detail {

/// Writes "gemmops: <message>" to stderr when GEMMOPS_LOG is set; otherwise does nothing.
/// For failures that cannot be returned (destructors, best-effort cache writes). Thread-safe.
void log(std::string_view message) noexcept;

}  // namespace gemmops::detail
