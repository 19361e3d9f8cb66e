// tests/compile/test_gather_reduce_compile.cpp: every gather-reduce kernel (element types x vector
// width, scaled and not) compiles with NVRTC for sm_80 and sm_90a, on a machine without a GPU, with
// no spill
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <string>

#include "moe/gather_reduce_kernels.hpp"

namespace gemmops {
namespace {

TEST(GatherReduceCompile, every_kernel_compiles_without_spills_for_sm80_and_sm90a) {
  for (DType in : {DType::bf16, DType::fp16, DType::fp32}) {
    for (DType out : {DType::bf16, DType::fp16, DType::fp32}) {
      for (int vec : {1, in == DType::fp32 ? 4 : 8}) {
        for (Target target : {Target::sm(80), Target::sm(90, true)}) {
          jit::CompileRequest req = moe::gather_reduce_request(in, out, vec);
          req.target = target;
          auto compiled = jit::compile_cached(req);
          const std::string what = req.name_expressions.at(1) + " for " + target.to_string();
          ASSERT_TRUE(compiled) << what << ": " << compiled.status().to_string();
          EXPECT_EQ((*compiled)->lowered_names.size(), 2u) << what;
          EXPECT_EQ((*compiled)->log.find("spill"), std::string::npos) << what << ": " << (*compiled)->log;
        }
      }
    }
  }
}

}  // namespace
}  // namespace gemmops
