// tests/unit/test_sm90_group_chunks.cpp: more groups than one launch's scheduler table holds run as
// launches over chunks of groups: the chunk arithmetic, each launch's parameters (against a fake
// driver), and the support answers for many groups, zero_tail and K = 0
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "gemmops/registry.hpp"
#include "sm90/designs.hpp"
#include "sm90/group_chunks.hpp"
#include "sm90/grouped_gemm.hpp"
#include "sm90/heuristics.hpp"
#include "sm90/kernel_config.hpp"
#include "sm90/launch_grouped.hpp"
#include "support/fake_driver.hpp"
#include "support/sm90_operators.hpp"

namespace gemmops {
namespace {

using kernels::sm90::GroupedGemmParams;
using sm90::GroupChunk;

const Target kHopper = Target::sm(90, true);

}  // namespace
}  // namespace gemmops

namespace gemmops::sm90 {
void PrintTo(const GroupChunk& c, std::ostream* os) {
  *os << "{" << c.first << ", " << c.count << (c.zero_tail ? ", tail}" : "}");
}
}  // namespace gemmops::sm90

namespace gemmops {
namespace {

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
  GroupedGemmParams params{};
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

// ---------------------------------------------------------------- support answers

const Device kCuda = Device::cuda(0);

GroupedGemmArguments forward(int64_t G, int64_t total_m, int64_t n, int64_t k) {
  return GroupedGemmArguments{TensorDesc::contiguous(DType::bf16, {total_m, k}, kCuda),
                              TensorDesc(DType::bf16, {G, k, n}, {n * k, 1, k}, kCuda),
                              TensorDesc::contiguous(DType::bf16, {total_m, n}, kCuda), DType::fp32,
                              TensorDesc::contiguous(DType::i32, {G}, kCuda)};
}

GroupedGemmArguments weight_gradient(int64_t G, int64_t total_k, int64_t m, int64_t n) {
  return GroupedGemmArguments{TensorDesc(DType::bf16, {m, total_k}, {1, m}, kCuda),
                              TensorDesc::contiguous(DType::bf16, {total_k, n}, kCuda),
                              TensorDesc::contiguous(DType::bf16, {G, m, n}, kCuda), DType::fp32,
                              TensorDesc::contiguous(DType::i32, {G}, kCuda)};
}

bool sm90_first(const Arguments& args) {
  const auto ops = get_operators(args, kHopper);
  return !ops.empty() && ops.front()->metadata().provider == "sm90";
}

TEST(Sm90GroupChunks, twenty_thousand_groups_find_every_sm90_operator_m_and_k_grouped) {
  const Arguments m_grouped = forward(20000, 65536, 2048, 768);
  const Arguments k_grouped = weight_gradient(20000, 65536, 256, 512);
  for (const OperatorPtr& op : testing::sm90_operators()) {
    if (op->metadata().constraints.out_dtypes[0] != DType::bf16 || op->metadata().constraints.a_dtypes[0] != DType::bf16)
      continue;
    SCOPED_TRACE(op->name());
    Status s = op->supports(m_grouped, kHopper);
    EXPECT_TRUE(s) << s.to_string();
    s = op->supports(k_grouped, kHopper);
    EXPECT_TRUE(s) << s.to_string();
  }
  EXPECT_TRUE(sm90_first(m_grouped));
  EXPECT_TRUE(sm90_first(k_grouped));
}

TEST(Sm90GroupChunks, a_design_that_needs_more_launches_is_estimated_slower_for_them) {
  const OperatorPtr ring2 = default_registry().find("sm90a_grouped_gemm_bf16_f32acc_128x256x64_c1x1_s4_coop_tma_ring2");
  ASSERT_NE(ring2, nullptr);
  // 164 groups fill its table; 165 take two launches.
  const double one = ring2->estimated_time_us(forward(164, 65536, 2048, 768), kHopper);
  const double two = ring2->estimated_time_us(forward(165, 65536, 2048, 768), kHopper);
  EXPECT_GT(two, one + 5.0);
}

TEST(Sm90GroupChunks, zero_tail_is_served_by_sm90) {
  GroupedGemmArguments args = forward(64, 4096, 2048, 768);
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
  for (const OperatorPtr& op : testing::sm90_operators()) {
    if (op->metadata().constraints.out_dtypes[0] != DType::bf16 || op->metadata().constraints.a_dtypes[0] != DType::bf16)
      continue;
    SCOPED_TRACE(op->name());
    Status s = op->supports(m_grouped, kHopper);
    EXPECT_TRUE(s) << s.to_string();
    s = op->supports(k_grouped, kHopper);
    EXPECT_TRUE(s) << s.to_string();
  }
}

// ---------------------------------------------------------------- launches (fake driver)

struct Seen {
  std::vector<GroupedGemmParams> params;
  std::vector<size_t> memsets_before;  // launches recorded when each flag memset was queued
  struct Map {
    const void* base;
    std::vector<cuuint64_t> dims, strides;
  };
  std::vector<Map> maps;
};
Seen& seen() {
  static Seen s;
  return s;
}

/// A fake driver that keeps each launch's parameters, the split-K memsets and the tensor maps asked for.
struct RecordingDriver {
  testing::ScopedFakeDriver fake;
  RecordingDriver() {
    seen() = {};
    fake.state().functions["kernel"] = reinterpret_cast<CUfunction>(uintptr_t{0x3001});
    fake.api().cuLaunchKernelEx = [](const CUlaunchConfig* c, CUfunction f, void** args, void**) {
      testing::RecordedLaunch l{f, *c, {}};
      l.config.attrs = nullptr;
      testing::fake_state().launches.push_back(l);
      seen().params.push_back(*static_cast<const GroupedGemmParams*>(args[0]));
      return CUDA_SUCCESS;
    };
    fake.api().cuMemsetD8Async = [](CUdeviceptr, unsigned char, std::size_t, CUstream) {
      seen().memsets_before.push_back(testing::fake_state().launches.size());
      return CUDA_SUCCESS;
    };
    fake.api().cuOccupancyMaxActiveClusters = [](int* n, CUfunction, const CUlaunchConfig*) {
      *n = 66;
      return CUDA_SUCCESS;
    };
    fake.api().cuTensorMapEncodeTiled = [](CUtensorMap* m, CUtensorMapDataType, cuuint32_t rank, void* base,
                                           const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t*,
                                           const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                           CUtensorMapL2promotion, CUtensorMapFloatOOBfill) {
      seen().maps.push_back(
          {base, std::vector<cuuint64_t>(dims, dims + rank), std::vector<cuuint64_t>(strides, strides + rank - 1)});
      std::memset(m, 0xAB, sizeof(*m));
      return CUDA_SUCCESS;
    };
  }
};

void* address(uintptr_t a) { return reinterpret_cast<void*>(a); }

const sm90::Sm90Design& design_named(const std::string& name) {
  for (const sm90::Sm90Design& d : sm90::sm90_designs())
    if (d.design.to_string() == name) return d;
  ADD_FAILURE() << "no design " << name;
  return sm90::sm90_designs()[0];
}

Status launch(const Arguments& args, const sm90::Sm90Design& d, int splits = 1, Workspace workspace = {}) {
  GEMMOPS_ASSIGN_OR_RETURN(sm90::KernelProblem p, sm90::map_problem(args));
  const auto c = sm90::make_kernel_config(d, DType::bf16, DType::bf16, p.a_major, p.b_major,
                                          p.kind == OperationKind::grouped_k);
  cuda::LazyModule module("cubin");
  return sm90::launch_grouped(p, c, module, "kernel", reinterpret_cast<Stream>(uintptr_t{0x77}), splits, workspace);
}

// Fake device addresses far enough apart that no operand overlaps another.
constexpr uintptr_t kOut = uintptr_t{3} << 40;
GroupedGemmArguments with_data(GroupedGemmArguments g) {
  g.A.data = address(uintptr_t{1} << 40);
  g.B.data = address(uintptr_t{2} << 40);
  g.out.data = address(kOut);
  g.offsets.data = address(uintptr_t{4} << 40);
  return g;
}

TEST(Sm90GroupChunksLaunch, twenty_thousand_groups_launch_in_order_on_the_stream_each_with_its_chunk) {
  RecordingDriver driver;
  GroupedGemmArguments args = with_data(forward(20000, 65536, 2048, 768));
  args.zero_tail = true;
  const sm90::Sm90Design& d = design_named("128x256x64_c1x1_s4_coop_tma_ring2");
  const Status s = launch(args, d);
  ASSERT_TRUE(s) << s.to_string();
  const auto c = sm90::make_kernel_config(d, DType::bf16, DType::bf16, Major::k, Major::k, false);
  const int64_t capacity = sm90::table_capacity(c, sm90::kSm90SmemBudget);
  const auto& launches = driver.fake.state().launches;
  const auto& params = seen().params;
  ASSERT_EQ(static_cast<int64_t>(launches.size()), (20000 + 1 + capacity - 1) / capacity);
  ASSERT_EQ(params.size(), launches.size());
  const auto* offsets = static_cast<const int32_t*>(args.offsets.data);
  int64_t next = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    SCOPED_TRACE("launch " + std::to_string(i));
    const bool last = i + 1 == params.size();
    EXPECT_EQ(params[i].group_base, next);
    EXPECT_EQ(params[i].offsets, offsets + next);
    EXPECT_EQ(params[i].start_offset, next > 0 ? offsets + next - 1 : nullptr);
    EXPECT_EQ(params[i].table_groups, params[i].groups + (last ? 1 : 0));
    EXPECT_EQ(params[i].rows, 65536);
    EXPECT_EQ(launches[i].config.hStream, reinterpret_cast<CUstream>(uintptr_t{0x77}));
    EXPECT_EQ(launches[i].config.sharedMemBytes,
              static_cast<unsigned>(c.smem_bytes(params[i].table_groups)));
    EXPECT_LE(launches[i].config.sharedMemBytes, static_cast<unsigned>(sm90::kSm90SmemBudget));
    next += params[i].groups;
  }
  EXPECT_EQ(next, 20000);
  EXPECT_TRUE(seen().memsets_before.empty());  // no split-K: no flags to clear
}

TEST(Sm90GroupChunksLaunch, k_grouped_chunks_count_their_results_from_their_first_group) {
  RecordingDriver driver;
  const GroupedGemmArguments args = with_data(weight_gradient(3000, 65536, 64, 256));
  ASSERT_TRUE(launch(args, design_named("128x256x64_c1x1_s4_coop_tma_ring2")));
  const auto& params = seen().params;
  ASSERT_GT(params.size(), 1u);
  int64_t next = 0;
  for (const GroupedGemmParams& p : params) {
    EXPECT_EQ(p.group_base, next);
    EXPECT_EQ(p.table_groups, p.groups);
    EXPECT_EQ(p.k, 65536);
    next += p.groups;
  }
  EXPECT_EQ(next, 3000);
}

TEST(Sm90GroupChunksLaunch, split_k_flags_are_cleared_before_every_launch) {
  RecordingDriver driver;
  const GroupedGemmArguments args = with_data(forward(400, 8192, 2048, 4096));
  const sm90::Sm90Design& d = design_named("128x256x64_c1x1_s4_coop_tma_ring2");
  auto p = sm90::map_problem(args);
  ASSERT_TRUE(p) << p.status().to_string();
  const auto c = sm90::make_kernel_config(d, DType::bf16, DType::bf16, Major::k, Major::k, false);
  const std::size_t bytes = sm90::split_k_workspace_bytes(*p, c, 2);
  ASSERT_TRUE(launch(args, d, 2, Workspace{address(uintptr_t{5} << 40), bytes}));
  const size_t launches = driver.fake.state().launches.size();
  ASSERT_EQ(launches, 3u);  // 400 groups, 164 a launch
  ASSERT_EQ(seen().memsets_before.size(), launches);
  for (size_t i = 0; i < launches; ++i) EXPECT_EQ(seen().memsets_before[i], i) << "memset before launch " << i;
  for (const GroupedGemmParams& params : seen().params) EXPECT_EQ(params.k_splits, 2);
}

TEST(Sm90GroupChunksLaunch, no_groups_launch_only_for_the_zero_tail) {
  RecordingDriver driver;
  GroupedGemmArguments args = with_data(forward(0, 1000, 256, 64));
  args.offsets.data = nullptr;  // torch's empty offsets
  ASSERT_TRUE(launch(args, sm90::sm90_designs()[0]));
  EXPECT_TRUE(driver.fake.state().launches.empty());
  args.zero_tail = true;
  ASSERT_TRUE(launch(args, sm90::sm90_designs()[0]));
  ASSERT_EQ(seen().params.size(), 1u);
  EXPECT_EQ(seen().params[0].groups, 0);
  EXPECT_EQ(seen().params[0].table_groups, seen().params[0].groups + 1);
  EXPECT_EQ(seen().params[0].start_offset, nullptr);
}

TEST(Sm90GroupChunksLaunch, operands_without_k_map_one_element_at_outs_address) {
  RecordingDriver driver;
  // torch's K = 0 tensors: null data, strides (1, 1) and (N, N, 1).
  GroupedGemmArguments args{TensorDesc(DType::bf16, {1000, 0}, {1, 1}, kCuda),
                            TensorDesc(DType::bf16, {8, 0, 2048}, {2048, 2048, 1}, kCuda),
                            TensorDesc::contiguous(DType::bf16, {1000, 2048}, kCuda, address(kOut)), DType::fp32,
                            TensorDesc::contiguous(DType::i32, {8}, kCuda, address(uintptr_t{4} << 40))};
  args.zero_tail = true;
  ASSERT_TRUE(launch(args, design_named("128x256x64_c2x1_s3_coop_tma")));
  ASSERT_EQ(seen().maps.size(), 3u);  // A, B and out (the TMA epilogue)
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(seen().maps[i].base, address(kOut)) << "map " << i;
    for (cuuint64_t d : seen().maps[i].dims) EXPECT_EQ(d, 1u) << "map " << i;
    for (cuuint64_t s : seen().maps[i].strides) EXPECT_EQ(s, 16u) << "map " << i;
  }
  EXPECT_EQ(seen().maps[2].dims, (std::vector<cuuint64_t>{2048, 1000}));  // out as it is
  ASSERT_EQ(seen().params.size(), 1u);
  EXPECT_EQ(seen().params[0].k, 0);
  EXPECT_EQ(seen().params[0].table_groups, seen().params[0].groups + 1);
}

}  // namespace
}  // namespace gemmops
