// tests/compile/test_fp8_quantize_compile.cpp: every fp8 quantisation kernel (bf16 and fp32 x, every
// vector width, the seven steps) compiles with NVRTC for sm_90a and sm_89 on a machine without a
// GPU, ptxas reporting no spill in any function
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <string>

#include "fp8/quantize_kernels.hpp"
#include "support/ptxas_log.hpp"

namespace gemmops {
namespace {

TEST(Fp8QuantizeCompile, every_kernel_compiles_for_sm90a_and_sm89_without_spills) {
  for (DType in : {DType::bf16, DType::fp32}) {
    for (int vec : {1, 2, 4, 8}) {
      if (!fp8::is_quantize_vector_width(in, vec)) continue;
      for (Target target : {Target::sm(90, true), Target::sm(89)}) {
        jit::CompileRequest req = fp8::quantize_request(in, vec);
        req.target = target;
        const std::string what = std::string(name(in)) + " vec " + std::to_string(vec) + " for " + target.to_string();
        ASSERT_EQ(req.name_expressions.size(), static_cast<size_t>(fp8::kQuantizeSteps)) << what;
        testing::expect_clean_compile(req, "fp8_quantize " + what);
        // The cached path the launcher takes gives a lowered name per step.
        auto compiled = jit::compile_cached(req);
        ASSERT_TRUE(compiled) << what << ": " << compiled.status().to_string();
        EXPECT_EQ((*compiled)->lowered_names.size(), static_cast<size_t>(fp8::kQuantizeSteps)) << what;
      }
    }
  }
}

TEST(Fp8QuantizeCompile, vector_widths_are_16_bytes_at_most) {
  EXPECT_TRUE(fp8::is_quantize_vector_width(DType::bf16, 8));
  EXPECT_FALSE(fp8::is_quantize_vector_width(DType::fp32, 8));
  EXPECT_FALSE(fp8::is_quantize_vector_width(DType::bf16, 3));
}

}  // namespace
}  // namespace gemmops
