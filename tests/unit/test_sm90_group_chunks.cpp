// tests/unit/test_sm90_group_chunks.cpp: more groups than one launch's scheduler table holds run as
// launches over chunks of groups: the chunk arithmetic, the table's capacity per design, and what
// each launch's parameters say
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "sm90/designs.hpp"
#include "sm90/group_chunks.hpp"
#include "sm90/grouped_gemm.hpp"
#include "sm90/kernel_config.hpp"
#include "sm90/launch_grouped.hpp"

namespace gemmops::sm90 {
// Failures print chunks as {first, count[, tail]}.
void PrintTo(const GroupChunk& c, std::ostream* os) {
  *os << "{" << c.first << ", " << c.count << (c.zero_tail ? ", tail}" : "}");
}
}  // namespace gemmops::sm90

namespace gemmops {
namespace {

using kernels::sm90::SchedulerParams;
using sm90::GroupChunk;

// Chunks cover [0, groups) in order, without gaps, each within the capacity, sizes within one of
// each other, and only the last carries the tail.
void expect_sound_chunks(const std::vector<GroupChunk>& chunks, int64_t groups, bool zero_tail, int64_t capacity) {
  ASSERT_FALSE(chunks.empty());
  int64_t next = 0, smallest = capacity, largest = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const GroupChunk& c = chunks[i];
    EXPECT_EQ(c.first, next) << "chunk " << i;
    EXPECT_GE(c.count, 0) << "chunk " << i;
    EXPECT_LE(c.table_groups(), capacity) << "chunk " << i;
    EXPECT_EQ(c.zero_tail, zero_tail && i + 1 == chunks.size()) << "chunk " << i;
    smallest = std::min(smallest, c.table_groups());
    largest = std::max(largest, c.table_groups());
    next += c.count;
  }
  EXPECT_EQ(next, groups);
  EXPECT_LE(largest - smallest, 1);
  const int64_t entries = groups + (zero_tail ? 1 : 0);
  EXPECT_EQ(static_cast<int64_t>(chunks.size()), (entries + capacity - 1) / capacity) << "no more launches than needed";
}

TEST(Sm90GroupChunks, groups_that_fit_run_as_one_launch_and_nothing_runs_without_groups_or_tail) {
  EXPECT_TRUE(sm90::split_groups(0, false, 164).empty());
  EXPECT_EQ(sm90::split_groups(0, true, 164), (std::vector<GroupChunk>{{0, 0, true}}));  // every row is tail
  EXPECT_EQ(sm90::split_groups(1, false, 164), (std::vector<GroupChunk>{{0, 1, false}}));
  EXPECT_EQ(sm90::split_groups(164, false, 164), (std::vector<GroupChunk>{{0, 164, false}}));
  EXPECT_EQ(sm90::split_groups(163, true, 164), (std::vector<GroupChunk>{{0, 163, true}}));
  EXPECT_TRUE(sm90::split_groups(10, false, 0).empty());
}

TEST(Sm90GroupChunks, the_tail_takes_a_table_entry_of_its_own) {
  // 164 groups fill a 164-entry table; their zero tail needs a second launch.
  EXPECT_EQ(sm90::split_groups(164, true, 164), (std::vector<GroupChunk>{{0, 83, false}, {83, 81, true}}));
  EXPECT_EQ(sm90::split_groups(165, false, 164), (std::vector<GroupChunk>{{0, 83, false}, {83, 82, false}}));
  // A capacity of one: the tail runs alone, after every group.
  EXPECT_EQ(sm90::split_groups(2, true, 1),
            (std::vector<GroupChunk>{{0, 1, false}, {1, 1, false}, {2, 0, true}}));
}

TEST(Sm90GroupChunks, chunks_cover_every_group_once_in_order_for_any_count) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int64_t> groups(0, 50000), capacity(1, 4000);
  for (int i = 0; i < 2000; ++i) {
    const int64_t g = groups(rng), cap = capacity(rng);
    for (bool tail : {false, true}) {
      if (g == 0 && !tail) continue;
      SCOPED_TRACE("G " + std::to_string(g) + " capacity " + std::to_string(cap) + (tail ? " zero_tail" : ""));
      expect_sound_chunks(sm90::split_groups(g, tail, cap), g, tail, cap);
    }
  }
  expect_sound_chunks(sm90::split_groups(20000, true, 2894), 20000, true, 2894);
}

TEST(Sm90GroupChunks, every_design_holds_its_capacity_in_a_hopper_block_and_a_few_hundred_groups_at_least) {
  for (const sm90::Sm90Design& d : sm90::sm90_designs()) {
    for (bool k_grouped : {false, true}) {
      const auto c = sm90::make_kernel_config(d, DType::bf16, DType::bf16, Major::k, Major::mn, k_grouped);
      const int64_t capacity = sm90::table_capacity(c, sm90::kSm90SmemBudget);
      SCOPED_TRACE(d.design.to_string());
      EXPECT_GE(capacity, 164);
      EXPECT_LE(c.smem_bytes(static_cast<int>(capacity)), sm90::kSm90SmemBudget);
      EXPECT_GT(c.smem_bytes(static_cast<int>(capacity) + 1), sm90::kSm90SmemBudget);
    }
  }
}

TEST(Sm90GroupChunks, a_launch_sees_its_chunks_offsets_start_and_group_base) {
  sm90::KernelProblem p;
  p.kind = OperationKind::grouped_m;
  p.groups = 1000;
  p.zero_tail = true;
  const auto* offsets = reinterpret_cast<const int32_t*>(uintptr_t{0x100000});
  p.offsets = offsets;
  SchedulerParams params{};
  sm90::apply_chunk(p, {0, 400, false}, &params);
  EXPECT_EQ(params.groups, 400);
  EXPECT_EQ(params.group_base, 0);
  EXPECT_EQ(params.offsets, offsets);
  EXPECT_EQ(params.start_offset, nullptr);  // the first group starts at row 0
  EXPECT_EQ(params.table_groups, 400);  // no tail
  sm90::apply_chunk(p, {400, 600, true}, &params);
  EXPECT_EQ(params.groups, 600);
  EXPECT_EQ(params.group_base, 400);
  EXPECT_EQ(params.offsets, offsets + 400);
  EXPECT_EQ(params.start_offset, offsets + 399);  // read on the device: no host synchronisation
  EXPECT_EQ(params.table_groups, 601);  // and the tail
  // Without offsets (batched) the groups are placed from group_base alone.
  p.kind = OperationKind::batched_gemm;
  p.offsets = nullptr;
  sm90::apply_chunk(p, {400, 600, false}, &params);
  EXPECT_EQ(params.offsets, nullptr);
  EXPECT_EQ(params.start_offset, nullptr);
  EXPECT_EQ(params.group_base, 400);
  // A chunk's scheduler units never exceed the whole problem's (the split-K workspace holds them).
  sm90::KernelProblem whole;
  whole.kind = OperationKind::grouped_m, whole.groups = 5000, whole.rows = 70000, whole.n = 4096;
  whole.offsets = offsets, whole.zero_tail = true;
  const auto c = sm90::make_kernel_config(sm90::sm90_designs()[0], DType::bf16, DType::bf16, Major::k, Major::k, false);
  for (const GroupChunk& chunk : sm90::group_chunks(whole, c))
    EXPECT_LE(sm90::max_scheduler_units(sm90::chunk_problem(whole, chunk), c), sm90::max_scheduler_units(whole, c));
}

TEST(Sm90GroupChunks, the_zero_tail_adds_a_scheduler_unit_and_only_to_the_m_grouped_form) {
  sm90::KernelProblem p;
  p.kind = OperationKind::grouped_m, p.groups = 8, p.rows = 1000, p.n = 512;
  p.offsets = reinterpret_cast<const int32_t*>(uintptr_t{0x100000});
  const auto c = sm90::make_kernel_config(sm90::sm90_designs()[0], DType::bf16, DType::bf16, Major::k, Major::k, false);
  const int64_t without = sm90::max_scheduler_units(p, c);
  p.zero_tail = true;
  EXPECT_EQ(sm90::max_scheduler_units(p, c), without + (512 + c.tile_n - 1) / c.tile_n);
  EXPECT_EQ(sm90::group_chunks(p, c).back().zero_tail, true);
  p.kind = OperationKind::grouped_k;  // writes every row of out: no tail
  EXPECT_EQ(sm90::group_chunks(p, c).back().zero_tail, false);
}

}  // namespace
}  // namespace gemmops
