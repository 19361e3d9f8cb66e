// tests/unit/test_sm90_fp8_support.cpp: what the fp8 main loop's operators serve and refuse (with the
// operand and the rule), and that discovery offers them (they passed the GPU suite)
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gemmops/gemmops.hpp"
#include "sm90/designs.hpp"
#include "sm90/kernel_config.hpp"
#include "support/problems.hpp"
#include "support/scoped_env.hpp"
#include "support/sm90_operators.hpp"

namespace gemmops {
namespace {

const Target kHopper = Target::sm(90, true);

OperatorPtr fp8_operator() {
  const std::vector<OperatorPtr> ops = testing::sm90_fp8_operators();
  return ops.empty() ? nullptr : ops.front();
}

/// `op` refuses `args` with a message that contains `what`.
void expect_refused(const Operator& op, const Arguments& args, const std::string& what) {
  const Status s = op.supports(args, kHopper);
  EXPECT_FALSE(s) << "accepted; expected a refusal with \"" << what << "\"";
  EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
}

TEST(Sm90Fp8Support, the_1_cta_128_wide_fp8_designs_are_offered_and_the_others_are_trials) {
  const std::vector<OperatorPtr> ops = testing::sm90_fp8_operators();
  ASSERT_FALSE(ops.empty());
  // 128x128 on 1 CTA, with either store, passed the GPU suite and ran fastest; the 2-CTA clusters
  // (B multicast) and the 192-wide tiles passed too but ran slower on every timed row.
  auto offered = [](const Design& d) { return d.tile_n == 128 && d.cluster_m == 1; };
  for (const OperatorPtr& op : ops) {
    EXPECT_EQ(op->metadata().trial, !offered(op->metadata().design)) << op->name();
    EXPECT_EQ(op->metadata().design.tile_k, 128) << op->name();
  }
  for (const sm90::Sm90Design& d : sm90::sm90_fp8_designs()) EXPECT_EQ(d.trial, !offered(d.design)) << d.design.to_string();
}

TEST(Sm90Fp8Support, a_192_wide_tile_holds_one_block_set_beside_the_sum) {
  // 128-wide: two block sets of 64 and the sum; 192-wide: one of 96 and the sum (three would not fit).
  for (const sm90::Sm90Design& d : sm90::sm90_fp8_designs()) {
    const auto c = sm90::make_kernel_config(d, DType::e4m3, DType::bf16, Major::k, Major::k, false);
    EXPECT_EQ(c.accumulator_registers(), d.design.tile_n == 128 ? 3 * 64 : 2 * 96) << d.design.to_string();
  }
}

TEST(Sm90Fp8Support, the_2_cta_design_refuses_rowwise_scales_naming_them) {
  for (const OperatorPtr& op : testing::sm90_fp8_operators()) {
    if (op->metadata().design.cluster_m == 1) continue;
    expect_refused(*op, testing::make_fp8_grouped_rowwise(4, 256, 320, 256),
                   "a_scales: rowwise fp8 scales are served on 1-CTA designs");
    EXPECT_TRUE(op->supports(testing::make_fp8_grouped(), kHopper)) << op->name();
  }
}

TEST(Sm90Fp8Support, serves_block_scaled_e4m3_m_grouped_incl_k_not_a_multiple_of_128) {
  const OperatorPtr op = fp8_operator();
  ASSERT_NE(op, nullptr);
  for (int64_t k : {128, 320, 16, 4096}) {
    const Status s = op->supports(testing::make_fp8_grouped(4, 256, k, 256), kHopper);
    EXPECT_TRUE(s) << "K = " << k << ": " << s.to_string();
  }
}

TEST(Sm90Fp8Support, serves_the_masked_layout_with_its_stacked_scales) {
  const OperatorPtr op = fp8_operator();
  ASSERT_NE(op, nullptr);
  const GroupedGemmArguments masked = testing::make_fp8_masked(4, 256, 320, 256);
  ASSERT_TRUE(validate(masked)) << validate(masked).to_string();
  EXPECT_TRUE(op->supports(masked, kHopper)) << op->supports(masked, kHopper).to_string();
  // Scales whose groups are not stacked by rows cannot be read as one (G * MaxM, KB) matrix.
  GroupedGemmArguments gapped = masked;
  gapped.a_scales->scales = TensorDesc(DType::fp32, {4, 256, 3}, {1024, 3, 1}, Device::cuda(0));
  expect_refused(*op, gapped, "a_scales: the fp8 main loop reads a masked A's (G, MaxM, KB) scales with the groups "
                              "stacked by rows");
}

TEST(Sm90Fp8Support, refuses_e4m3_and_bf16_mixed) {
  const OperatorPtr op = fp8_operator();
  ASSERT_NE(op, nullptr);
  GroupedGemmArguments g = testing::make_fp8_grouped();
  g.B = TensorDesc(DType::bf16, g.B.shape, g.B.strides, g.B.device);
  g.b_scales.reset();
  const Status s = op->supports(g, kHopper);
  EXPECT_FALSE(s);
  EXPECT_EQ(s.message().rfind("B", 0), 0u) << s.message();  // names B
}

TEST(Sm90Fp8Support, refuses_k_not_a_multiple_of_16_bytes) {
  const OperatorPtr op = fp8_operator();
  ASSERT_NE(op, nullptr);
  const Status s = op->supports(testing::make_fp8_grouped(4, 256, 136, 256), kHopper);
  EXPECT_FALSE(s);
  EXPECT_EQ(s.message().rfind("A", 0), 0u) << s.message();  // names A (its rows' 16-byte rule)
}

TEST(Sm90Fp8Support, refuses_unscaled_operands_naming_the_scales) {
  const OperatorPtr op = fp8_operator();
  ASSERT_NE(op, nullptr);
  GroupedGemmArguments g = testing::make_fp8_grouped();
  g.a_scales.reset();
  expect_refused(*op, g, "a_scales: the fp8 main loop needs A's block_1x128 or row scales");
  g = testing::make_fp8_grouped();
  g.b_scales.reset();
  expect_refused(*op, g, "b_scales: the fp8 main loop needs B's block_128x128 or row scales");
}

TEST(Sm90Fp8Support, refuses_other_granularities_and_layouts_naming_the_operand) {
  const OperatorPtr op = fp8_operator();
  ASSERT_NE(op, nullptr);
  const Device cuda = Device::cuda(0);
  GroupedGemmArguments g = testing::make_fp8_grouped(4, 256, 320, 256);
  g.a_scales = OperandScales{TensorDesc::contiguous(DType::fp32, {1}, cuda), ScaleGranularity::tensor};
  expect_refused(*op, g, "a_scales: tensor scaling is not served by this operator");
  // A row with B blocks (or the other way): the two kinds do not mix.
  g = testing::make_fp8_grouped(4, 256, 320, 256);
  g.a_scales = testing::make_fp8_grouped_rowwise(4, 256, 320, 256).a_scales;
  expect_refused(*op, g, "b_scales: the fp8 main loop takes A block_1x128 with B block_128x128, or A row with B row");
  g = testing::make_fp8_grouped(4, 256, 320, 256);
  g.a_scales = OperandScales{TensorDesc(DType::fp32, {256, 3}, {1, 256}, cuda), ScaleGranularity::block_1x128,
                             ScaleLayout::mn_major};
  expect_refused(*op, g, "a_scales: mn_major block scales are not served by this operator");
  g = testing::make_fp8_grouped(4, 256, 320, 256);
  g.b_scales = OperandScales{TensorDesc::contiguous(DType::fp32, {4, 256, 3}, cuda), ScaleGranularity::block_1x128};
  expect_refused(*op, g, "b_scales: block_1x128 scaling is not served by this operator");
}

TEST(Sm90Fp8Support, serves_rowwise_scales_with_contiguous_columns_of_b) {
  const OperatorPtr op = fp8_operator();
  ASSERT_NE(op, nullptr);
  GroupedGemmArguments g = testing::make_fp8_grouped_rowwise(4, 256, 320, 256);
  EXPECT_TRUE(op->supports(g, kHopper)) << op->supports(g, kHopper).to_string();
  g.b_scales->scales = TensorDesc(DType::fp32, {4, 256}, {1, 4}, Device::cuda(0));  // columns strided
  expect_refused(*op, g, "b_scales: the fp8 main loop reads B's row scales (G, N) with the columns contiguous");
}

TEST(Sm90Fp8Support, refuses_padded_rows_of_b_scales) {
  const OperatorPtr op = fp8_operator();
  ASSERT_NE(op, nullptr);
  GroupedGemmArguments g = testing::make_fp8_grouped(4, 256, 320, 256);  // KB = 3, N blocks 2
  g.b_scales = OperandScales{TensorDesc(DType::fp32, {4, 2, 3}, {8, 4, 1}, Device::cuda(0)),
                             ScaleGranularity::block_128x128};
  expect_refused(*op, g, "b_scales: the fp8 main loop reads 128x128 scales whose N blocks are ceil(K/128) = 3");
}

TEST(Sm90Fp8Support, refuses_an_epilogue_op) {
  const OperatorPtr op = fp8_operator();
  ASSERT_NE(op, nullptr);
  GroupedGemmArguments g = testing::make_fp8_grouped();
  g.epilogue.activation = Activation::silu;
  EXPECT_FALSE(op->supports(g, kHopper));
}

TEST(Sm90Fp8Support, discovery_offers_it_first_without_the_trial_opt_in) {
  const OperatorPtr fp8 = fp8_operator();
  ASSERT_NE(fp8, nullptr);
  const GroupedGemmArguments g = testing::make_fp8_grouped();
  auto offered = [&] {
    for (const OperatorPtr& op : get_operators(g, kHopper))
      if (op->name() == fp8->name()) return true;
    return false;
  };
  testing::ScopedEnv no_trial{{"GEMMOPS_TRIAL_DESIGNS", "0"}};
  EXPECT_TRUE(offered());
  // Ahead of the CPU operators that also serve e4m3 on a Hopper target, the TMA epilogue first.
  const std::vector<OperatorPtr> ranked = get_operators(g, kHopper);
  ASSERT_FALSE(ranked.empty());
  EXPECT_EQ(ranked.front()->name(), fp8->name());
  EXPECT_EQ(ranked.front()->metadata().design.epilogue, Epilogue::tma_store) << ranked.front()->name();
}

}  // namespace
}  // namespace gemmops
