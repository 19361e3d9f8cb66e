// include/gemmops/assert.hpp: GEMMOPS_ASSERT for bugs only; never for anything a user can cause
// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace gemmops::detail {
[[noreturn]] void assert_fail(const char* file, int line, const char* condition, const char* message);
}  // namespace gemmops::detail

#define GEMMOPS_ASSERT(cond, message) \
  ((cond) ? (void)0 : ::gemmops::detail::assert_fail(__FILE__, __LINE__, #cond, message))
