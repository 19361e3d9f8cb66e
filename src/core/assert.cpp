// src/core/assert.cpp: the one place a bug stops the process (GEMMOPS_ASSERT)
// SPDX-License-Identifier: Apache-2.0
#include "gemmops/assert.hpp"

#include <cstdio>
#include <cstdlib>

namespace gemmops::detail {

void assert_fail(const char* file, int line, const char* condition, const char* message) {
  // A broken invariant of gemmops itself: printing and aborting is the only honest answer.
  std::fprintf(stderr, "gemmops: %s:%d: assertion failed: %s: %s\n", file, line, condition,
               message != nullptr ? message : "");
  std::fflush(stderr);
  std::abort();
}

}  // namespace gemmops::detail
