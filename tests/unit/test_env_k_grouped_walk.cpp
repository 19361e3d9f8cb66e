// tests/unit/test_env_k_grouped_walk.cpp: GEMMOPS_K_GROUPED_WALK (core/env.cpp)
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/env.hpp"

namespace gemmops::env {
namespace {

struct WalkVariable {
  explicit WalkVariable(const char* v) {
    if (v) ::setenv("GEMMOPS_K_GROUPED_WALK", v, 1);
    else ::unsetenv("GEMMOPS_K_GROUPED_WALK");
  }
  ~WalkVariable() { ::unsetenv("GEMMOPS_K_GROUPED_WALK"); }
};

TEST(EnvKGroupedWalk, longest_first_unless_index_is_asked_for) {
  { WalkVariable w(nullptr); EXPECT_TRUE(k_grouped_walk_longest_first()); }
  { WalkVariable w("longest"); EXPECT_TRUE(k_grouped_walk_longest_first()); }
  { WalkVariable w("Index"); EXPECT_TRUE(k_grouped_walk_longest_first()); }  // exact spelling only
  { WalkVariable w("index"); EXPECT_FALSE(k_grouped_walk_longest_first()); }
}

}  // namespace
}  // namespace gemmops::env
