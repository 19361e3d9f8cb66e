// tests/unit/test_env_kernel_defines.cpp: GEMMOPS_KERNEL_DEFINES reaches every sm90 kernel compile as
// -D options (and so its cache key): a kernel variant compiled beside the default in one process
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/env.hpp"
#include "gemmops/gemmops.hpp"
#include "sm90/designs.hpp"
#include "sm90/kernel_compile.hpp"
#include "support/scoped_env.hpp"

namespace gemmops {
namespace {

using testing::ScopedEnv;

std::vector<std::string> request_options() {
  return sm90::make_compile_request(sm90::sm90_designs().front(), DType::bf16, DType::bf16, Major::k, EpilogueOps{},
                                    Target::sm(90, true))
      .options;
}

TEST(EnvKernelDefines, splits_on_spaces_and_commas_and_skips_empty_names) {
  ScopedEnv env{{"GEMMOPS_KERNEL_DEFINES", " A=1,B  C=x ,, "}};
  EXPECT_EQ(env::kernel_defines(), (std::vector<std::string>{"A=1", "B", "C=x"}));
}

TEST(EnvKernelDefines, unset_adds_nothing) {
  const std::vector<std::string> before = request_options();
  ScopedEnv env{{"GEMMOPS_KERNEL_DEFINES", "GEMMOPS_AB_BASELINE"}};
  const std::vector<std::string> with = request_options();
  EXPECT_EQ(std::count(before.begin(), before.end(), "-DGEMMOPS_AB_BASELINE"), 0);
  EXPECT_EQ(std::count(with.begin(), with.end(), "-DGEMMOPS_AB_BASELINE"), 1);
  EXPECT_EQ(with.size(), before.size() + 1);
}

TEST(EnvKernelDefines, only_a_kernel_compiled_with_gemmops_pdl_asks_for_programmatic_launch) {
  auto request = [] {
    return sm90::make_compile_request(sm90::sm90_designs().front(), DType::bf16, DType::bf16, Major::k,
                                      EpilogueOps{}, Target::sm(90, true));
  };
  EXPECT_FALSE(sm90::waits_for_programmatic_launch(request()));
  {
    ScopedEnv env{{"GEMMOPS_KERNEL_DEFINES", "GEMMOPS_PDLX GEMMOPS_UNIFORM_WARPGROUP"}};
    EXPECT_FALSE(sm90::waits_for_programmatic_launch(request()));
  }
  ScopedEnv env{{"GEMMOPS_KERNEL_DEFINES", "GEMMOPS_UNIFORM_WARPGROUP GEMMOPS_PDL"}};
  EXPECT_TRUE(sm90::waits_for_programmatic_launch(request()));
}

}  // namespace
}  // namespace gemmops
