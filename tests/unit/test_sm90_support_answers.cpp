// tests/unit/test_sm90_support_answers.cpp: what sm90 operators answer for thousands of groups,
// zero_tail and K = 0 in torch's layouts (served, and ranked first), and what more launches cost in
// the estimate
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <vector>

#include <cstdint>

#include "support/problems.hpp"
#include "gemmops/registry.hpp"
#include "support/sm90_operators.hpp"

namespace gemmops {
namespace {

const Target kHopper = Target::sm(90, true);
const Device kCuda = Device::cuda(0);

bool sm90_first(const Arguments& args) {
  const auto ops = get_operators(args, kHopper);
  return !ops.empty() && ops.front()->metadata().provider == "sm90";
}

// Every sm90 operator of bf16 in and out serves each of `args` of a form it serves (the designs of
// 192 accumulators a thread serve no K-grouped form).
void expect_every_bf16_operator_supports(const std::vector<Arguments>& args) {
  for (const OperatorPtr& op : testing::sm90_operators()) {
    const auto& c = op->metadata().constraints;
    if (c.out_dtypes[0] != DType::bf16 || c.a_dtypes[0] != DType::bf16) continue;
    SCOPED_TRACE(op->name());
    for (const Arguments& a : args) {
      if (!testing::serves(*op, operation_kind(a).value())) {
        EXPECT_TRUE(testing::design_serves_m_grouped_only(op->metadata().design));
        continue;
      }
      const Status s = op->supports(a, kHopper);
      EXPECT_TRUE(s) << s.to_string();
    }
  }
}

TEST(Sm90GroupChunks, twenty_thousand_groups_find_every_sm90_operator_m_and_k_grouped) {
  const Arguments m_grouped = testing::moe_forward(20000, 65536, 2048, 768);
  const Arguments k_grouped = testing::moe_weight_gradient(20000, 65536, 256, 512);
  expect_every_bf16_operator_supports({m_grouped, k_grouped});
  EXPECT_TRUE(sm90_first(m_grouped));
  EXPECT_TRUE(sm90_first(k_grouped));
}

TEST(Sm90GroupChunks, a_design_that_needs_more_launches_is_estimated_slower_for_them) {
  const OperatorPtr ring2 = default_registry().find("sm90a_grouped_gemm_bf16_f32acc_128x256x64_c1x1_s4_coop_tma_ring2");
  ASSERT_NE(ring2, nullptr);
  // 164 groups fill its table; 165 take two launches.
  const double one = ring2->estimated_time_us(testing::moe_forward(164, 65536, 2048, 768), kHopper);
  const double two = ring2->estimated_time_us(testing::moe_forward(165, 65536, 2048, 768), kHopper);
  EXPECT_GT(two, one + 5.0);
}

TEST(Sm90GroupChunks, zero_tail_is_served_by_sm90) {
  GroupedGemmArguments args = testing::moe_forward(64, 4096, 2048, 768);
  args.zero_tail = true;
  EXPECT_TRUE(sm90_first(args));
  const OperatorPtr op = get_operators(args, kHopper).front();
  const Status s = op->supports(args, kHopper);
  EXPECT_TRUE(s) << s.to_string();
}

TEST(Sm90GroupChunks, k_zero_in_torch_layouts_is_served_by_sm90) {
  // torch gives a (TotalM, 0) tensor strides (1, 1) and a (G, 0, N) one (N, N, 1): neither says K-major.
  GroupedGemmArguments m_grouped{TensorDesc(DType::bf16, {4096, 0}, {1, 1}, kCuda),
                                 TensorDesc(DType::bf16, {8, 0, 2048}, {2048, 2048, 1}, kCuda),
                                 TensorDesc::contiguous(DType::bf16, {4096, 2048}, kCuda), DType::fp32,
                                 TensorDesc::contiguous(DType::i32, {8}, kCuda)};
  EXPECT_TRUE(sm90_first(m_grouped));
  m_grouped.zero_tail = true;
  EXPECT_TRUE(sm90_first(m_grouped));
  // B stored (G, N, K) with K = 0: strides (N, 1, 1).
  m_grouped.B = TensorDesc(DType::bf16, {8, 0, 2048}, {2048, 1, 1}, kCuda);
  EXPECT_TRUE(sm90_first(m_grouped));
  // K-grouped with TotalK = 0: every group's result is zeros. A (M, 0) as torch gives it.
  GroupedGemmArguments k_grouped{TensorDesc(DType::bf16, {256, 0}, {1, 1}, kCuda),
                                 TensorDesc(DType::bf16, {0, 512}, {512, 1}, kCuda),
                                 TensorDesc::contiguous(DType::bf16, {8, 256, 512}, kCuda), DType::fp32,
                                 TensorDesc::contiguous(DType::i32, {8}, kCuda)};
  EXPECT_TRUE(sm90_first(k_grouped));
  expect_every_bf16_operator_supports({m_grouped, k_grouped});
}

}  // namespace
}  // namespace gemmops
