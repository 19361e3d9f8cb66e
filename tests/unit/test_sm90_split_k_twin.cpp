// tests/unit/test_sm90_split_k_twin.cpp: which kernels carry a split-K twin, and plans that never split
// without one (an epilogue op, or 192 accumulators a thread)
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gemmops/gemmops.hpp"
#include "sm90/designs.hpp"
#include "sm90/heuristics.hpp"
#include "sm90/kernel_compile.hpp"
#include "sm90/kernel_config.hpp"
#include "sm90/plan.hpp"
#include "support/scoped_env.hpp"

namespace gemmops::sm90 {
namespace {

// Few tiles, long K: the shape the estimate splits (256 x 1024 x 16384, dense).
Arguments skinny() {
  const Device cuda = Device::cuda(0);
  return GemmArguments{TensorDesc::contiguous(DType::bf16, {256, 16384}, cuda),
                       TensorDesc(DType::bf16, {16384, 1024}, {1, 16384}, cuda),
                       TensorDesc::contiguous(DType::bf16, {256, 1024}, cuda), DType::fp32};
}

TEST(Sm90SplitKTwin, wide_accumulators_have_none) {
  // 128x192 ping-pong: 192 fp32 accumulators a consumer thread (not registered: it spills).
  Sm90Design d = sm90_designs().front();
  d.design.tile_m = 128, d.design.tile_n = 192, d.design.schedule = Schedule::pingpong, d.design.cluster_m = 1;
  d.design.epilogue = Epilogue::store, d.consumers = 2;
  const KernelConfig c = make_kernel_config(d, DType::bf16, DType::bf16, Major::k, Major::k, false);
  EXPECT_TRUE(c.wide_accumulators());
  EXPECT_FALSE(has_split_k_twin(c));
  EXPECT_EQ(make_compile_request(d, DType::bf16, DType::bf16, Major::k, EpilogueOps{}, Target::sm(90, true))
                .name_expressions.size(),
            1u);
}

TEST(Sm90SplitKTwin, only_narrow_identity_m_axis_kernels_have_one) {
  int wide = 0, narrow = 0;
  for (const Sm90Design& d : sm90_designs()) {
    const KernelConfig c = make_kernel_config(d, DType::bf16, DType::bf16, Major::k, Major::k, false);
    const auto req = make_compile_request(d, DType::bf16, DType::bf16, Major::k, EpilogueOps{}, Target::sm(90, true));
    SCOPED_TRACE(d.design.to_string());
    if (c.wide_accumulators() || c.cluster_n > 1) {  // (a cluster along N: no split-K kernels yet)
      ++wide;
      EXPECT_FALSE(has_split_k_twin(c));
      EXPECT_EQ(req.name_expressions.size(), 1u);
    } else {
      ++narrow;
      EXPECT_TRUE(has_split_k_twin(c));
      EXPECT_EQ(req.name_expressions.size(), 2u);
    }
    const KernelConfig k_grouped = make_kernel_config(d, DType::bf16, DType::bf16, Major::mn, Major::mn, true);
    EXPECT_FALSE(has_split_k_twin(k_grouped));
  }
  EXPECT_GT(wide, 0);  // 128x192 ping-pong
  EXPECT_GT(narrow, 0);
}

TEST(Sm90SplitKTwin, plans_without_a_twin_never_split_even_when_forced) {
  const testing::ScopedEnv force({{"GEMMOPS_SPLIT_K", "4"}});
  int checked = 0;
  std::vector<Sm90Design> designs(sm90_designs().begin(), sm90_designs().end());
  Sm90Design wide = designs.front();  // 128x192 ping-pong, as above
  wide.design.tile_m = 128, wide.design.tile_n = 192, wide.design.schedule = Schedule::pingpong;
  wide.design.cluster_m = 1, wide.design.epilogue = Epilogue::store, wide.consumers = 2;
  designs.push_back(wide);
  for (const Sm90Design& d : designs) {
    const Sm90Plan plan(skinny(), d, DType::bf16, DType::bf16, kH200);
    if (!plan.status()) continue;
    SCOPED_TRACE(d.design.to_string());
    if (has_split_k_twin(plan.config())) {
      EXPECT_EQ(plan.splits(), 4);
    } else {
      EXPECT_EQ(plan.splits(), 1);
      EXPECT_EQ(plan.workspace_bytes(), 0u);
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace gemmops::sm90
