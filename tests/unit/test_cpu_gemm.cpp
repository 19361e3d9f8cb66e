// tests/unit/test_cpu_gemm.cpp: the CPU operators against the float64 loop, every kind, dtype and layout
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "cpu/cpu_operator.hpp"
#include "support/compare.hpp"
#include "support/random_problems.hpp"
#include "support/reference.hpp"

namespace gemmops::testing {
namespace {

struct DTypes {
  DType a, b;
};
constexpr DTypes kInputDTypes[] = {{DType::bf16, DType::bf16}, {DType::fp16, DType::fp16},
                                   {DType::fp32, DType::fp32}, {DType::e4m3, DType::e4m3},
                                   {DType::e5m2, DType::e5m2}, {DType::e4m3, DType::e5m2},
                                   {DType::e5m2, DType::e4m3}};
constexpr DType kOutDTypes[] = {DType::bf16, DType::fp16, DType::fp32};

// Runs the CPU operator of the spec's kind on a fresh random problem and checks every element.
void expect_matches_reference(const ProblemSpec& spec, std::mt19937& rng) {
  HostProblem p = make_problem(spec, rng);
  const cpu::CpuOperator op(spec.kind);
  const Arguments args = p.arguments();
  const Status s = op.run(args);
  ASSERT_TRUE(s.is_ok()) << spec.describe() << ": " << s.to_string();
  const Comparison c = compare(p.out, reference_result(args), default_tolerance(spec.out, spec.k));
  EXPECT_TRUE(c.ok()) << spec.describe() << ": " << c.describe();
}

ProblemSpec random_spec(OperationKind kind, std::mt19937& rng) {
  std::uniform_int_distribution<int64_t> size(1, 70), groups(1, 6);
  ProblemSpec s;
  s.kind = kind;
  s.m = size(rng), s.n = size(rng), s.k = size(rng);
  s.groups = kind == OperationKind::gemm ? 1 : groups(rng);
  if (kind == OperationKind::grouped_m) s.trailing = s.m / 4;
  if (kind == OperationKind::grouped_n) s.trailing = s.n / 4;
  s.a_major = rng() % 2 ? Major::k : Major::mn;
  s.b_major = rng() % 2 ? Major::k : Major::mn;
  return s;
}

TEST(CpuGemm, every_kind_and_dtype_combination_matches_the_float64_loop) {
  std::mt19937 rng(7);
  for (OperationKind kind : kAllOperationKinds)
    for (DTypes in : kInputDTypes)
      for (DType out : kOutDTypes) {
        ProblemSpec s = random_spec(kind, rng);
        s.a = in.a, s.b = in.b, s.out = out;
        expect_matches_reference(s, rng);
      }
}

TEST(CpuGemm, every_major_of_a_and_b_and_every_out_layout_is_honoured) {
  std::mt19937 rng(11);
  for (OperationKind kind : kAllOperationKinds)
    for (Major am : {Major::k, Major::mn})
      for (Major bm : {Major::k, Major::mn})
        for (OutLayout ol : {OutLayout::contiguous, OutLayout::padded, OutLayout::column_major})
          for (bool padded_inputs : {false, true}) {
            ProblemSpec s = random_spec(kind, rng);
            s.a_major = am, s.b_major = bm, s.out_layout = ol, s.padded_inputs = padded_inputs;
            expect_matches_reference(s, rng);
          }
}

TEST(CpuGemm, aligned_groups_compute_their_rows_and_leave_the_padding_untouched) {
  std::mt19937 rng(17);
  for (int32_t alignment : {2, 8, 64})
    for (int i = 0; i < 4; ++i) {
      ProblemSpec s = random_spec(OperationKind::grouped_m, rng);
      s.m = 300, s.groups = 5, s.group_alignment = alignment;  // the poison stays in the padding rows
      expect_matches_reference(s, rng);
    }
}

TEST(CpuGemm, the_zero_tail_of_aligned_groups_starts_where_the_offsets_end) {
  // Ends {10, 20, 20} with alignment 8: groups [0, 10), [16, 20) and an empty one (it would start at
  // 24). The tail is the rows past offsets[G-1] = 20, as without alignment: rows 20..23 are zeros
  // too, not padding; rows 10..15 are padding and keep the poison. (Every operator agrees on this.)
  std::mt19937 rng(23);
  ProblemSpec s;
  s.kind = OperationKind::grouped_m, s.m = 40, s.n = 24, s.k = 16, s.groups = 3, s.group_alignment = 8;
  s.zero_tail = true;
  HostProblem p = make_problem(s, rng);
  for (int64_t g = 0; g < 3; ++g) p.offsets.set(g, g == 0 ? 10 : 20);
  const Arguments args = p.arguments();
  ASSERT_TRUE(cpu::CpuOperator(s.kind).run(args).is_ok());
  const Reference ref = reference_result(args);
  for (int64_t row : {10, 15}) EXPECT_FALSE(ref.written[static_cast<size_t>(row * s.n)]) << "padding row " << row;
  for (int64_t row : {20, 23, 39}) EXPECT_TRUE(ref.written[static_cast<size_t>(row * s.n)]) << "tail row " << row;
  const Comparison c = compare(p.out, ref, default_tolerance(s.out, s.k));
  EXPECT_TRUE(c.ok()) << c.describe();
}

TEST(CpuGemm, masked_groups_compute_their_counted_rows_only) {
  std::mt19937 rng(19);
  for (int i = 0; i < 6; ++i) {  // group 0 full, group 1 empty, the others random counts
    ProblemSpec s = random_spec(OperationKind::grouped_m_masked, rng);
    s.groups = 4, s.padded_inputs = i % 2;
    s.out_layout = i % 3 == 0 ? OutLayout::padded : OutLayout::contiguous;
    expect_matches_reference(s, rng);
  }
}

TEST(CpuGemm, shapes_across_every_block_boundary_match) {
  // Sizes one past the row tile (576), the column block (256) and the K block (256).
  std::mt19937 rng(13);
  ProblemSpec s;
  s.a = s.b = DType::fp32, s.out = DType::fp32;
  s.kind = OperationKind::gemm, s.m = 581, s.n = 263, s.k = 517, s.groups = 1;
  expect_matches_reference(s, rng);
  s.kind = OperationKind::grouped_m, s.m = 1300, s.n = 257, s.k = 259, s.groups = 3, s.trailing = 17;
  s.b_major = Major::k, s.a = s.b = DType::bf16, s.out = DType::bf16;
  expect_matches_reference(s, rng);
  s.kind = OperationKind::grouped_k, s.m = 97, s.n = 261, s.k = 700, s.groups = 3, s.trailing = 0;
  expect_matches_reference(s, rng);
  s.kind = OperationKind::grouped_n, s.m = 97, s.n = 700, s.k = 261, s.groups = 3, s.trailing = 13;
  expect_matches_reference(s, rng);
}

TEST(CpuGemm, groups_of_zero_and_one_rows_and_a_single_group_work) {
  std::mt19937 rng(17);
  for (OperationKind kind : {OperationKind::grouped_m, OperationKind::grouped_k, OperationKind::grouped_n}) {
    for (int64_t g : {1, 3, 9}) {
      ProblemSpec s = random_spec(kind, rng);
      s.groups = g, s.special_groups = true;
      expect_matches_reference(s, rng);
    }
    ProblemSpec all_empty = random_spec(kind, rng);  // every row (K, column) past offsets[G-1]
    all_empty.trailing = kind == OperationKind::grouped_m   ? all_empty.m
                         : kind == OperationKind::grouped_k ? all_empty.k
                                                            : all_empty.n;
    expect_matches_reference(all_empty, rng);
    all_empty.zero_tail = true;
    expect_matches_reference(all_empty, rng);
  }
}

TEST(CpuGemm, an_empty_k_group_writes_zeros) {
  std::mt19937 rng(19);
  ProblemSpec s;
  s.kind = OperationKind::grouped_k, s.m = 5, s.n = 7, s.k = 9, s.groups = 3;
  HostProblem p = make_problem(s, rng);
  for (int64_t g = 0; g < 3; ++g) p.offsets.set(g, g == 0 ? 0 : 9);  // group 0 and 2 empty
  ASSERT_TRUE(cpu::CpuOperator(s.kind).run(p.arguments()).is_ok());
  for (int64_t e = 0; e < 5 * 7; ++e) {
    EXPECT_EQ(p.out.get(e), 0.0) << e;                  // group 0
    EXPECT_EQ(p.out.get(2 * 5 * 7 + e), 0.0) << e;      // group 2
  }
}

TEST(CpuGemm, exact_sums_are_rounded_to_nearest_even_into_out) {
  std::mt19937 rng(37);
  for (DTypes in : kInputDTypes)
    for (DType out : kOutDTypes) {
      ProblemSpec s = random_spec(OperationKind::grouped_m, rng);
      s.a = in.a, s.b = in.b, s.out = out, s.k = 200;  // bf16 out must round sums up to 12800
      HostProblem p = make_problem(s, rng);
      fill_random_integers(p.A, rng);
      fill_random_integers(p.B, rng);
      ASSERT_TRUE(cpu::CpuOperator(s.kind).run(p.arguments()).is_ok());
      Reference ref = reference_result(p.arguments());
      std::byte tmp[4];
      for (double& v : ref.values) store_element(out, tmp, v), v = load_element(out, tmp);
      const Comparison c = compare(p.out, ref, Tolerance{0, 0});
      EXPECT_TRUE(c.ok()) << s.describe() << ": " << c.describe();
    }
}

TEST(CpuGemm, nan_in_an_input_row_reaches_only_that_row) {
  std::mt19937 rng(23);
  ProblemSpec s;
  s.kind = OperationKind::gemm, s.m = 4, s.n = 5, s.k = 6, s.groups = 1;
  HostProblem p = make_problem(s, rng);
  p.A.set(1 * 6 + 2, std::nan(""));
  ASSERT_TRUE(cpu::CpuOperator(s.kind).run(p.arguments()).is_ok());
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 5; ++j) EXPECT_EQ(std::isnan(p.out.get(i * 5 + j)), i == 1) << i << "," << j;
}

TEST(CpuGemm, the_result_is_the_same_for_any_thread_count) {
  std::mt19937 rng(29);
  ProblemSpec s;
  s.kind = OperationKind::grouped_m, s.m = 900, s.n = 300, s.k = 64, s.groups = 5;
  HostProblem p = make_problem(s, rng);
  std::vector<std::vector<std::byte>> results;
  for (const char* threads : {"1", "3"}) {
    ::setenv("GEMMOPS_CPU_THREADS", threads, 1);
    p.out.poison();
    ASSERT_TRUE(cpu::CpuOperator(s.kind).run(p.arguments()).is_ok());
    results.push_back(p.out.storage);
  }
  ::unsetenv("GEMMOPS_CPU_THREADS");
  EXPECT_TRUE(results[0] == results[1]);  // no split-K: each element is summed in one fixed order
}

}  // namespace
}  // namespace gemmops::testing
