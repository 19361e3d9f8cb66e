// tests/compile/test_route_compile.cpp: the three routing kernels compile with NVRTC for sm_80 and
// sm_90a, on a machine without a GPU, with no spill
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <string>

#include "moe/route_kernels.hpp"

namespace gemmops {
namespace {

TEST(RouteCompile, the_count_scan_and_scatter_kernels_compile_without_spills_for_sm80_and_sm90a) {
  for (Target target : {Target::sm(80), Target::sm(90, true)}) {
    jit::CompileRequest req = moe::route_request();
    req.target = target;
    auto compiled = jit::compile_cached(req);
    ASSERT_TRUE(compiled) << target.to_string() << ": " << compiled.status().to_string();
    EXPECT_EQ((*compiled)->lowered_names.size(), 6u);  // the three chunked kernels, and the three wide ones
    EXPECT_EQ((*compiled)->log.find("spill"), std::string::npos) << (*compiled)->log;
  }
}

}  // namespace
}  // namespace gemmops
