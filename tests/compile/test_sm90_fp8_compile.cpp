// tests/compile/test_sm90_fp8_compile.cpp: the fp8 main loop's kernels (kernels/sm90/mainloop_fp8.cuh)
// compile with NVRTC for sm_90a, keep wgmma asynchronous and spill nothing, on every fp8 design; and
// the fp8 operators compile from fake scaled tensors
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <string>

#include "gemmops/gemmops.hpp"
#include "jit/compile.hpp"
#include "jit/nvrtc_api.hpp"
#include "sm90/designs.hpp"
#include "sm90/kernel_compile.hpp"
#include "sm90/kernel_config.hpp"
#include "support/problems.hpp"
#include "support/ptxas_log.hpp"
#include "support/sm90_operators.hpp"

namespace gemmops {
namespace {

TEST(Sm90Fp8Compile, every_fp8_design_compiles_spill_free_with_wgmma_asynchronous) {
  if (auto api = jit::nvrtc(); !api) GTEST_SKIP() << api.status().message();
  int compiled = 0;
  for (const sm90::Sm90Design& d : sm90::sm90_fp8_designs()) {
    for (bool rowwise : {false, true}) {  // DeepGEMM's blocks, torch's rowwise scales
      if (rowwise && d.design.cluster_m > 1) continue;  // refused by the plan (it would spill)
      sm90::KernelConfig c = sm90::make_kernel_config(d, DType::e4m3, DType::bf16, Major::k, Major::k, false);
      c.fp8_rowwise = rowwise;
      ASSERT_FALSE(sm90::has_split_k_twin(c));  // the fp8 main loop has no split-K
      const std::string label = testing::test_label("sm90_fp8_" + d.design.to_string() + (rowwise ? "_rowwise" : ""));
      SCOPED_TRACE(label);
      jit::CompileRequest req = sm90::make_compile_request(label, c, Target::sm(90, true));
      ASSERT_EQ(req.name_expressions.size(), 1u);
      testing::expect_clean_compile(req, label);
      ++compiled;
    }
  }
  EXPECT_GE(compiled, 1);
}

TEST(Sm90Fp8Compile, every_fp8_operator_compiles_from_fake_scaled_tensors) {
  if (auto api = jit::nvrtc(); !api) GTEST_SKIP() << api.status().message();
  int compiled = 0;
  for (const OperatorPtr& op : testing::sm90_fp8_operators()) {
    SCOPED_TRACE(op->name());
    const GroupedGemmArguments g = testing::make_fp8_grouped(4, 256, 320, 256);  // K = 320: a partial last block
    const Status s = op->supports(g);
    ASSERT_TRUE(s) << s.to_string();
    auto artifact = op->compile(g);
    ASSERT_TRUE(artifact) << artifact.status().to_string();
    EXPECT_NE(artifact->description().find("ElemType::e4m3"), std::string::npos) << artifact->description();
    // torch's rowwise scales: the kernel of the other kind (1-CTA designs; a 2-CTA one refuses them).
    const GroupedGemmArguments row = testing::make_fp8_grouped_rowwise(4, 256, 320, 256);
    const Status rs = op->supports(row);
    if (op->metadata().design.cluster_m > 1) {
      EXPECT_FALSE(rs);
      EXPECT_NE(rs.to_string().find("a_scales: rowwise fp8 scales are served on 1-CTA designs"), std::string::npos)
          << rs.to_string();
      ++compiled;
      continue;
    }
    ASSERT_TRUE(rs) << rs.to_string();
    auto row_artifact = op->compile(row);
    ASSERT_TRUE(row_artifact) << row_artifact.status().to_string();
    EXPECT_NE(row_artifact->description().find(".fp8_rowwise = true"), std::string::npos) << row_artifact->description();
    // A block A with a row B: refused naming the pair.
    GroupedGemmArguments mixed = g;
    mixed.b_scales = row.b_scales;
    const Status ms = op->supports(mixed);
    EXPECT_FALSE(ms);
    EXPECT_NE(ms.to_string().find("A block_1x128 with B block_128x128, or A row with B row"), std::string::npos)
        << ms.to_string();
    ++compiled;
  }
  EXPECT_GE(compiled, 1);
}

}  // namespace
}  // namespace gemmops
