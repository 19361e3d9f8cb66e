// tests/compile/test_router_topk_compile.cpp: the router's softmax-top-k kernels (forward, backward)
// compile with NVRTC for sm_80 and sm_90a, every logits dtype and row width, on a machine without a
// GPU, with no spill
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <string>

#include "moe/router_topk_kernels.hpp"

namespace gemmops {
namespace {

TEST(RouterTopkCompile, the_kernels_compile_without_spills_for_every_dtype_and_width) {
  EXPECT_EQ(moe::router_values_per_lane(1), 1);
  EXPECT_EQ(moe::router_values_per_lane(32), 1);
  EXPECT_EQ(moe::router_values_per_lane(33), 2);
  EXPECT_EQ(moe::router_values_per_lane(128), 4);
  EXPECT_EQ(moe::router_values_per_lane(1024), 32);
  for (Target target : {Target::sm(80), Target::sm(90, true)}) {
    for (DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
      for (int values : {1, 2, 4, 8, 16, 32}) {
        jit::CompileRequest req = moe::router_topk_request(dtype, values);
        req.target = target;
        auto compiled = jit::compile_cached(req);
        const std::string what = target.to_string() + " " + std::string(name(dtype)) + " " + std::to_string(values);
        ASSERT_TRUE(compiled) << what << ": " << compiled.status().to_string();
        EXPECT_EQ((*compiled)->lowered_names.size(), 2u) << what;
        EXPECT_EQ((*compiled)->log.find("spill"), std::string::npos) << what << ": " << (*compiled)->log;
      }
    }
  }
}

}  // namespace
}  // namespace gemmops
