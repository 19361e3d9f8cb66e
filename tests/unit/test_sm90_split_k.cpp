// tests/unit/test_sm90_split_k.cpp: when the sm90 operators split K, and the workspace that asks for
// (fake tensors: no GPU needed)
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "support/problems.hpp"
#include "gemmops/gemmops.hpp"

namespace gemmops {
namespace {

const Target kHopper = Target::sm(90, true);
const Device kCuda = Device::cuda(0);

GemmArguments dense(int64_t m, int64_t n, int64_t k) {
  return GemmArguments{TensorDesc::contiguous(DType::bf16, {m, k}, kCuda),
                       TensorDesc::contiguous(DType::bf16, {k, n}, kCuda),
                       TensorDesc::contiguous(DType::bf16, {m, n}, kCuda), DType::fp32};
}

struct ForcedSplitK {
  explicit ForcedSplitK(int s) { ::setenv("GEMMOPS_SPLIT_K", std::to_string(s).c_str(), 1); }
  ~ForcedSplitK() { ::unsetenv("GEMMOPS_SPLIT_K"); }
};

TEST(Sm90SplitK, a_skinny_gemm_with_long_k_splits_and_asks_for_workspace) {
  // 256 x 1024 out is 8-32 tiles for 132 SMs; K = 16384 is 256 k-blocks of work per tile.
  const auto ops = get_operators(dense(256, 1024, 16384), kHopper);
  ASSERT_FALSE(ops.empty());
  EXPECT_GT(ops.front()->workspace_size(dense(256, 1024, 16384)), 0u) << ops.front()->name();
}

TEST(Sm90SplitK, problems_with_waves_of_tiles_do_not_split) {
  const GroupedGemmArguments seed = testing::moe_forward(12, 8192, 2048, 1024);
  for (const OperatorPtr& op : get_operators(seed, kHopper)) EXPECT_EQ(op->workspace_size(seed), 0u) << op->name();
}

TEST(Sm90SplitK, the_k_grouped_form_never_splits_even_when_forced) {
  ForcedSplitK forced(4);
  const GroupedGemmArguments wgrad = testing::moe_weight_gradient(4, 256, 16384, 1024);
  const auto ops = get_operators(wgrad, kHopper);
  ASSERT_FALSE(ops.empty());
  for (const OperatorPtr& op : ops) EXPECT_EQ(op->workspace_size(wgrad), 0u) << op->name();
}

TEST(Sm90SplitK, forcing_follows_the_limits_and_sizes_the_workspace) {
  const GroupedGemmArguments args = testing::moe_forward(8, 1000, 512, 4096);  // 64 k-blocks: up to 8 ways
  const auto ops = get_operators(args, kHopper);
  ASSERT_FALSE(ops.empty());
  const OperatorPtr& op = ops.front();
  std::size_t two = 0, eight = 0;
  {
    ForcedSplitK forced(2);
    two = op->workspace_size(args);
  }
  {
    ForcedSplitK forced(8);
    eight = op->workspace_size(args);
  }
  {
    ForcedSplitK forced(100);  // capped at 8
    EXPECT_EQ(op->workspace_size(args), eight);
  }
  EXPECT_GT(two, 0u);
  EXPECT_GT(eight, 6 * two);  // 7 partials per slot against 1, plus the same flags
  const GroupedGemmArguments short_k = testing::moe_forward(8, 1000, 512, 192);  // 3 k-blocks: too short to split
  ForcedSplitK forced(4);
  EXPECT_EQ(op->workspace_size(short_k), 0u);
}

}  // namespace
}  // namespace gemmops
