// tests/unit/test_sm90_smem_budget.cpp: every design's shared memory fits a Hopper block, and a
// design whose stages leave little room for the scheduler's per-group table runs more groups than
// fit in more launches
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <string>

#include "gemmops/registry.hpp"
#include "sm90/designs.hpp"
#include "sm90/group_chunks.hpp"
#include "sm90/grouped_gemm.hpp"
#include "sm90/kernel_config.hpp"

namespace gemmops {
namespace {

const Target kHopper = Target::sm(90, true);
const std::string kRing2 = "sm90a_grouped_gemm_bf16_f32acc_128x256x64_c1x1_s4_coop_tma_ring2";

GroupedGemmArguments forward(int64_t G, int64_t total_m, int64_t n, int64_t k) {
  const Device cuda = Device::cuda(0);
  return GroupedGemmArguments{TensorDesc::contiguous(DType::bf16, {total_m, k}, cuda),
                              TensorDesc(DType::bf16, {G, k, n}, {n * k, 1, k}, cuda),
                              TensorDesc::contiguous(DType::bf16, {total_m, n}, cuda), DType::fp32,
                              TensorDesc::contiguous(DType::i32, {G}, cuda)};
}

TEST(Sm90SmemBudget, every_design_fits_a_block_with_room_for_a_hundred_groups) {
  for (const sm90::Sm90Design& d : sm90::sm90_designs()) {
    const auto c = sm90::make_kernel_config(d, DType::bf16, DType::bf16, Major::k, Major::k, false);
    EXPECT_LE(c.smem_bytes(100), sm90::kSm90SmemBudget) << d.design.to_string();
  }
}

TEST(Sm90SmemBudget, every_fp8_design_fits_a_block_with_room_for_a_hundred_groups) {
  for (const sm90::Sm90Design& d : sm90::sm90_fp8_designs()) {
    const auto c = sm90::make_kernel_config(d, DType::e4m3, DType::bf16, Major::k, Major::k, false);
    EXPECT_LE(c.smem_bytes(100), sm90::kSm90SmemBudget) << d.design.to_string();
  }
}

TEST(Sm90SmemBudget, a_ring_of_two_boxes_stages_a_quarter_of_a_128x256_tile) {
  const sm90::Sm90Design* ring2 = nullptr;
  for (const sm90::Sm90Design& d : sm90::sm90_designs())
    if (d.design.to_string() == "128x256x64_c1x1_s4_coop_tma_ring2") ring2 = &d;
  ASSERT_NE(ring2, nullptr);
  const auto c = sm90::make_kernel_config(*ring2, DType::bf16, DType::bf16, Major::k, Major::k, false);
  EXPECT_EQ(c.epilogue_ring(), 2);
  EXPECT_EQ(c.epilogue_bytes(), 2 * 2 * 64 * 64 * 2);  // two warpgroups, two 8 KiB boxes each
  // The whole-tile default: a warpgroup's 64 x 256 slab is four boxes.
  auto whole = c;
  whole.epilogue_boxes = 0;
  EXPECT_EQ(whole.epilogue_ring(), 4);
}

TEST(Sm90SmemBudget, a_4_stage_ring_2_design_runs_more_groups_than_its_table_holds_in_more_launches) {
  const OperatorPtr op = default_registry().find(kRing2);
  ASSERT_NE(op, nullptr);
  const sm90::Sm90Design* ring2 = nullptr;
  for (const sm90::Sm90Design& d : sm90::sm90_designs())
    if (d.design.to_string() == "128x256x64_c1x1_s4_coop_tma_ring2") ring2 = &d;
  ASSERT_NE(ring2, nullptr);
  const auto c = sm90::make_kernel_config(*ring2, DType::bf16, DType::bf16, Major::k, Major::k, false);
  // Its stages leave room for 164 groups' table: 165 run as two launches (group_chunks.hpp).
  EXPECT_EQ(sm90::table_capacity(c, sm90::kSm90SmemBudget), 164);
  for (int64_t groups : {164, 165, 20000}) {
    const Status s = op->supports(forward(groups, 65536, 2048, 768), kHopper);
    EXPECT_TRUE(s) << groups << ": " << s.message();
    auto p = sm90::map_problem(forward(groups, 65536, 2048, 768));
    ASSERT_TRUE(p);
    EXPECT_EQ(sm90::launch_count(*p, c), (groups + 163) / 164);
  }
}

}  // namespace
}  // namespace gemmops
