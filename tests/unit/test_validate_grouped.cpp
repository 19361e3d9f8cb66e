// tests/unit/test_validate_grouped.cpp: one test per rule of grouped GEMM and its offsets, with messages
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <vector>

#include "gemmops/arguments.hpp"
#include "support/invalid.hpp"
#include "support/problems.hpp"

namespace gemmops {
namespace {

using testing::make_grouped_k;
using testing::make_grouped_m;
using testing::make_grouped_n;

using testing::invalid;

// Host offsets with data: only then are the values checked.
GroupedGemmArguments with_host_offsets(GroupedGemmArguments g, std::vector<int32_t>& values) {
  g.offsets = TensorDesc::contiguous(DType::i32, {static_cast<int64_t>(values.size())}, Device::cpu(), values.data());
  return g;
}

TEST(ValidateGrouped, valid_m_k_and_n_grouped_pass) {
  EXPECT_TRUE(validate(make_grouped_m(12, 8192, 2048, 1024)));
  EXPECT_TRUE(validate(make_grouped_k(12, 1024, 2048, 8192)));
  EXPECT_TRUE(validate(make_grouped_n(12, 1024, 8192, 2048)));
  EXPECT_TRUE(validate(make_grouped_n(4, 16, 0, 16)));  // no columns at all
  EXPECT_TRUE(validate(make_grouped_m(4, 0, 16, 16)));  // no tokens at all
}

TEST(ValidateGrouped, ranks_must_be_2_3_2_or_2_2_3_or_3_2_2_or_3_3_3) {
  auto g = make_grouped_m(4, 64, 16, 16);
  g.B = TensorDesc::contiguous(DType::bf16, {16, 16});
  EXPECT_EQ(invalid(g), "A, B, out: ranks must be 2/3/2 (grouped_gemm_m), 2/2/3 (grouped_gemm_k), 3/2/2 "
                        "(grouped_gemm_n) or 3/3/3 (grouped_gemm_m_masked); got 2/2/2");
  g.A = TensorDesc::contiguous(DType::bf16, {4, 16, 16});
  g.B = TensorDesc::contiguous(DType::bf16, {4, 16, 16});
  EXPECT_EQ(invalid(g), "A, B, out: ranks must be 2/3/2 (grouped_gemm_m), 2/2/3 (grouped_gemm_k), 3/2/2 "
                        "(grouped_gemm_n) or 3/3/3 (grouped_gemm_m_masked); got 3/3/2");
}

// The masked form: A (G,MaxM,K), B (G,K,N), out (G,MaxM,N), offsets = row counts.
GroupedGemmArguments masked(int64_t G, int64_t max_m, int64_t n, int64_t k) {
  return GroupedGemmArguments{TensorDesc::contiguous(DType::bf16, {G, max_m, k}),
                              TensorDesc::contiguous(DType::bf16, {G, k, n}),
                              TensorDesc::contiguous(DType::bf16, {G, max_m, n}), DType::fp32,
                              TensorDesc::contiguous(DType::i32, {G})};
}

TEST(ValidateGrouped, masked_form_is_valid_and_its_shape_counts_every_row) {
  const auto g = masked(8, 128, 4096, 7168);
  EXPECT_TRUE(validate(g));
  EXPECT_EQ(*operation_kind(g), OperationKind::grouped_m_masked);
  const auto shape = problem_shape(g);
  ASSERT_TRUE(shape);
  EXPECT_EQ(shape->m, 8 * 128);
  EXPECT_EQ(shape->groups, 8);
  EXPECT_EQ(shape->n, 4096);
  EXPECT_EQ(shape->k, 7168);
}

TEST(ValidateGrouped, masked_shapes_must_agree) {
  auto g = masked(8, 128, 64, 32);
  g.B = TensorDesc::contiguous(DType::bf16, {4, 32, 64});
  EXPECT_EQ(invalid(g), "B: G (4) must equal A's G (8); A (G,MaxM,K) = (8, 128, 32), B (G,K,N) = (4, 32, 64)");
  g = masked(8, 128, 64, 32);
  g.out = TensorDesc::contiguous(DType::bf16, {8, 64, 64});
  EXPECT_EQ(invalid(g), "out: MaxM (64) must equal A's MaxM (128); A (G,MaxM,K) = (8, 128, 32), out (G,MaxM,N) = "
                        "(8, 64, 64)");
  g = masked(8, 128, 64, 32);
  g.offsets = TensorDesc::contiguous(DType::i32, {7});
  EXPECT_EQ(invalid(g), "offsets: must be int32 with shape (G,) = (8,); got int32 with shape (7,)");
}

TEST(ValidateGrouped, masked_counts_must_lie_in_0_to_max_m) {
  std::vector<int32_t> counts = {3, 0, 129, 5};
  EXPECT_EQ(invalid(with_host_offsets(masked(4, 128, 64, 32), counts)),
            "offsets: the masked form's row counts must be in [0, MaxM] = [0, 128]; got offsets[2] = 129");
  counts = {3, -1, 2, 5};
  EXPECT_EQ(invalid(with_host_offsets(masked(4, 128, 64, 32), counts)),
            "offsets: the masked form's row counts must be in [0, MaxM] = [0, 128]; got offsets[1] = -1");
  counts = {128, 0, 1, 5};  // full, empty, one row: fine (and not a prefix sum)
  EXPECT_TRUE(validate(with_host_offsets(masked(4, 128, 64, 32), counts)));
}

TEST(ValidateGrouped, masked_form_has_no_zero_tail) {
  auto g = masked(4, 128, 64, 32);
  g.zero_tail = true;
  EXPECT_EQ(invalid(g), "zero_tail: the masked form has no tail (each group's rows past its count are left "
                        "untouched); got zero_tail = true");
}

TEST(ValidateGrouped, group_alignment_is_a_power_of_two_of_the_m_grouped_form) {
  auto g = make_grouped_m(4, 256, 16, 16);
  g.group_alignment = 12;
  EXPECT_EQ(invalid(g), "group_alignment: must be a power of two (1: contiguous groups); got 12");
  g.group_alignment = 0;
  EXPECT_EQ(invalid(g), "group_alignment: must be a power of two (1: contiguous groups); got 0");
  g.group_alignment = 128;
  EXPECT_TRUE(validate(g));
  auto k = make_grouped_k(4, 16, 16, 256);
  k.group_alignment = 8;
  EXPECT_EQ(invalid(k), "group_alignment: only the M-grouped form (2/3/2) has aligned groups; got 8 for "
                        "grouped_gemm_k");
}

TEST(ValidateGrouped, aligned_groups_end_at_or_after_their_aligned_start) {
  auto g = make_grouped_m(4, 256, 16, 16);
  g.group_alignment = 16;
  std::vector<int32_t> ends = {5, 16, 40, 48};  // starts 0, 16, 16, 48: group 3 is empty
  EXPECT_TRUE(validate(with_host_offsets(g, ends)));
  ends = {5, 5, 40, 48};  // group 1 empty, written without its padding: also fine
  EXPECT_TRUE(validate(with_host_offsets(g, ends)));
  ends = {5, 16, 40, 47};
  EXPECT_EQ(invalid(with_host_offsets(g, ends)),
            "offsets: with group_alignment 16 a group must end at or after its aligned start (or where the previous "
            "group ended: empty); got offsets[3] = 47 before the start 48 (offsets[2] = 40 rounded up)");
}

TEST(ValidateGrouped, operands_must_have_rank_1_to_3) {
  auto g = make_grouped_m(4, 64, 16, 16);
  g.B = TensorDesc::contiguous(DType::bf16, {1, 4, 16, 16});
  EXPECT_EQ(invalid(g), "B: rank must be 1 to 3; got rank 4 with shape (1, 4, 16, 16)");
}

TEST(ValidateGrouped, m_grouped_b_k_must_equal_a_k) {
  auto g = make_grouped_m(12, 8192, 2048, 2048);
  g.B = TensorDesc::contiguous(DType::bf16, {12, 1024, 2048});
  EXPECT_EQ(invalid(g), "B: K (1024) must equal A's K (2048); A (TotalM,K) = (8192, 2048), B (G,K,N) = "
                        "(12, 1024, 2048)");
}

TEST(ValidateGrouped, m_grouped_out_rows_must_equal_a_rows) {
  auto g = make_grouped_m(4, 64, 16, 32);
  g.out = TensorDesc::contiguous(DType::bf16, {60, 16});
  EXPECT_EQ(invalid(g), "out: TotalM (60) must equal A's TotalM (64); A (TotalM,K) = (64, 32), out (TotalM,N) = "
                        "(60, 16)");
}

TEST(ValidateGrouped, m_grouped_out_n_must_equal_b_n) {
  auto g = make_grouped_m(4, 64, 16, 32);
  g.out = TensorDesc::contiguous(DType::bf16, {64, 17});
  EXPECT_EQ(invalid(g), "out: N (17) must equal B's N (16); B (G,K,N) = (4, 32, 16), out (TotalM,N) = (64, 17)");
}

TEST(ValidateGrouped, k_grouped_b_total_k_must_equal_a_total_k) {
  auto g = make_grouped_k(4, 32, 16, 256);
  g.B = TensorDesc::contiguous(DType::bf16, {255, 16});
  EXPECT_EQ(invalid(g), "B: TotalK (255) must equal A's TotalK (256); A (M,TotalK) = (32, 256), B (TotalK,N) = "
                        "(255, 16)");
}

TEST(ValidateGrouped, k_grouped_out_m_must_equal_a_m) {
  auto g = make_grouped_k(4, 32, 16, 256);
  g.out = TensorDesc::contiguous(DType::fp32, {4, 31, 16});
  EXPECT_EQ(invalid(g), "out: M (31) must equal A's M (32); A (M,TotalK) = (32, 256), out (G,M,N) = (4, 31, 16)");
}

TEST(ValidateGrouped, k_grouped_out_n_must_equal_b_n) {
  auto g = make_grouped_k(4, 32, 16, 256);
  g.out = TensorDesc::contiguous(DType::fp32, {4, 32, 15});
  EXPECT_EQ(invalid(g), "out: N (15) must equal B's N (16); B (TotalK,N) = (256, 16), out (G,M,N) = (4, 32, 15)");
}

TEST(ValidateGrouped, n_grouped_b_k_must_equal_a_k) {
  auto g = make_grouped_n(4, 32, 256, 64);
  g.B = TensorDesc::contiguous(DType::bf16, {63, 256});
  EXPECT_EQ(invalid(g), "B: K (63) must equal A's K (64); A (G,M,K) = (4, 32, 64), B (K,TotalN) = (63, 256)");
}

TEST(ValidateGrouped, n_grouped_out_m_must_equal_a_m) {
  auto g = make_grouped_n(4, 32, 256, 64);
  g.out = TensorDesc::contiguous(DType::bf16, {31, 256});
  EXPECT_EQ(invalid(g), "out: M (31) must equal A's M (32); A (G,M,K) = (4, 32, 64), out (M,TotalN) = (31, 256)");
}

TEST(ValidateGrouped, n_grouped_out_total_n_must_equal_b_total_n) {
  auto g = make_grouped_n(4, 32, 256, 64);
  g.out = TensorDesc::contiguous(DType::bf16, {32, 255});
  EXPECT_EQ(invalid(g), "out: TotalN (255) must equal B's TotalN (256); B (K,TotalN) = (64, 256), out (M,TotalN) = "
                        "(32, 255)");
}

TEST(ValidateGrouped, offsets_length_must_be_the_group_count_of_a_when_n_grouped) {
  auto g = make_grouped_n(4, 32, 256, 64);
  g.offsets = TensorDesc::contiguous(DType::i32, {5});
  EXPECT_EQ(invalid(g), "offsets: must be int32 with shape (G,) = (4,); got int32 with shape (5,)");
}

TEST(ValidateGrouped, n_grouped_offsets_follow_the_common_rules) {
  auto g = make_grouped_n(4, 32, 256, 64, DType::bf16, Device::cuda(0));
  g.offsets.device = Device::cpu();
  EXPECT_EQ(invalid(g), "offsets: must be on A's device (cuda:0); got cpu");
  g = make_grouped_n(4, 32, 256, 64);
  g.offsets.dtype = DType::fp32;
  EXPECT_EQ(invalid(g), "offsets: must be int32 with shape (G,) = (4,); got fp32 with shape (4,)");
}

TEST(ValidateGrouped, offsets_must_be_int32) {
  auto g = make_grouped_m(12, 64, 16, 16);
  g.offsets.dtype = DType::fp32;
  EXPECT_EQ(invalid(g), "offsets: must be int32 with shape (G,) = (12,); got fp32 with shape (12,)");
}

TEST(ValidateGrouped, offsets_must_have_rank_1) {
  auto g = make_grouped_m(12, 64, 16, 16);
  g.offsets = TensorDesc::contiguous(DType::i32, {12, 1});
  EXPECT_EQ(invalid(g), "offsets: must be int32 with shape (G,) = (12,); got int32 with shape (12, 1)");
}

TEST(ValidateGrouped, offsets_length_must_be_the_group_count_of_b) {
  auto g = make_grouped_m(12, 64, 16, 16);
  g.offsets = TensorDesc::contiguous(DType::i32, {11});
  EXPECT_EQ(invalid(g), "offsets: must be int32 with shape (G,) = (12,); got int32 with shape (11,)");
}

TEST(ValidateGrouped, offsets_length_must_be_the_group_count_of_out_when_k_grouped) {
  auto g = make_grouped_k(3, 16, 16, 64);
  g.offsets = TensorDesc::contiguous(DType::i32, {4});
  EXPECT_EQ(invalid(g), "offsets: must be int32 with shape (G,) = (3,); got int32 with shape (4,)");
}

TEST(ValidateGrouped, offsets_must_be_contiguous) {
  auto g = make_grouped_m(4, 64, 16, 16);
  g.offsets.strides = {2};
  EXPECT_EQ(invalid(g), "offsets: must be contiguous (stride 1); got strides (2,)");
}

TEST(ValidateGrouped, offsets_strides_must_be_non_negative) {
  auto g = make_grouped_m(4, 64, 16, 16);
  g.offsets.strides = {-1};
  EXPECT_EQ(invalid(g), "offsets: strides must be non-negative; got strides (-1,)");
}

TEST(ValidateGrouped, offsets_must_be_on_a_device) {
  auto g = make_grouped_m(4, 64, 16, 16, DType::bf16, Device::cuda(0));
  g.offsets.device = Device::cpu();
  EXPECT_EQ(invalid(g), "offsets: must be on A's device (cuda:0); got cpu");
}

TEST(ValidateGrouped, host_offsets_must_be_non_negative) {
  std::vector<int32_t> v{-1, 10, 20, 64};
  EXPECT_EQ(invalid(with_host_offsets(make_grouped_m(4, 64, 16, 16), v)),
            "offsets: must be non-negative; got offsets[0] = -1");
}

TEST(ValidateGrouped, host_offsets_must_be_nondecreasing) {
  std::vector<int32_t> v{0, 12, 10, 64};
  EXPECT_EQ(invalid(with_host_offsets(make_grouped_m(4, 64, 16, 16), v)),
            "offsets: must be nondecreasing; got offsets[2] = 10 after offsets[1] = 12");
}

TEST(ValidateGrouped, host_offsets_must_end_within_total_m) {
  std::vector<int32_t> v{10, 20, 30, 65};
  EXPECT_EQ(invalid(with_host_offsets(make_grouped_m(4, 64, 16, 16), v)),
            "offsets: last offset must be at most TotalM (64); got offsets[3] = 65");
}

TEST(ValidateGrouped, host_offsets_must_end_within_total_k) {
  std::vector<int32_t> v{100, 300};
  EXPECT_EQ(invalid(with_host_offsets(make_grouped_k(2, 16, 16, 256), v)),
            "offsets: last offset must be at most TotalK (256); got offsets[1] = 300");
}

TEST(ValidateGrouped, host_offsets_must_end_within_total_n) {
  std::vector<int32_t> v{100, 200, 257};
  EXPECT_EQ(invalid(with_host_offsets(make_grouped_n(3, 16, 256, 16), v)),
            "offsets: last offset must be at most TotalN (256); got offsets[2] = 257");
}

TEST(ValidateGrouped, n_grouped_host_offsets_must_be_nondecreasing) {
  std::vector<int32_t> v{100, 50, 256};
  EXPECT_EQ(invalid(with_host_offsets(make_grouped_n(3, 16, 256, 16), v)),
            "offsets: must be nondecreasing; got offsets[1] = 50 after offsets[0] = 100");
}

TEST(ValidateGrouped, host_offsets_may_leave_empty_groups_and_trailing_rows) {
  std::vector<int32_t> v{0, 0, 30, 30};
  EXPECT_TRUE(validate(with_host_offsets(make_grouped_m(4, 64, 16, 16), v)));
}

// An expert-parallel rank with no tokens (TotalM = 0), N = 0, and a K-grouped out of no groups
// (G = 0), each with numpy's zero strides for arrays without elements.
TEST(ValidateGrouped, operands_without_elements_may_have_any_strides) {
  auto m = make_grouped_m(4, 0, 16, 8);
  m.A.strides = m.out.strides = {0, 0};
  EXPECT_TRUE(validate(m));
  m = make_grouped_m(4, 32, 0, 8);
  m.B.strides = {0, 0, 0};
  m.out.strides = {0, 0};
  EXPECT_TRUE(validate(m));
  auto k = make_grouped_k(0, 16, 8, 32);
  k.out.strides = {0, 0, 0};
  k.offsets.strides = {0};
  EXPECT_TRUE(validate(k));
}

TEST(ValidateGrouped, device_offsets_values_are_not_read) {
  int32_t bogus[4] = {-5, -5, -5, -5};
  auto g = make_grouped_m(4, 64, 16, 16, DType::bf16, Device::cuda(0));
  g.offsets.data = bogus;  // a device pointer in real use; never dereferenced on the host
  EXPECT_TRUE(validate(g));
}

TEST(ValidateGrouped, out_must_not_overlap_offsets_in_memory) {
  std::vector<uint16_t> buf(64 * 16 + 16);
  auto g = make_grouped_m(4, 64, 16, 16);
  g.out.data = buf.data();
  g.offsets.data = buf.data() + 8;  // values are read too: make them valid
  auto* off = reinterpret_cast<int32_t*>(g.offsets.data);
  for (int i = 0; i < 4; ++i) off[i] = 0;
  std::string m = invalid(g);
  EXPECT_EQ(m.rfind("out: must not overlap offsets in memory", 0), 0u) << m;
}

TEST(ValidateGrouped, common_rules_apply_to_grouped_too) {
  auto g = make_grouped_m(4, 64, 16, 16);
  g.accumulator = DType::bf16;
  EXPECT_EQ(invalid(g), "accumulator: must be fp32; got bf16");
  g = make_grouped_k(4, 16, 16, 64);
  g.out.strides = {0, 16, 1};
  EXPECT_EQ(invalid(g), "out: elements must not overlap; got stride 0 on dimension 0 of size 4, strides (0, 16, 1)");
}

TEST(ProblemShape, grouped_m_uses_total_m_and_g) {
  auto p = problem_shape(make_grouped_m(12, 8192, 2048, 1024));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->kind, OperationKind::grouped_m);
  EXPECT_EQ(p->m, 8192);
  EXPECT_EQ(p->n, 2048);
  EXPECT_EQ(p->k, 1024);
  EXPECT_EQ(p->groups, 12);
}

TEST(ProblemShape, grouped_n_uses_m_total_n_k_and_the_groups_of_a) {
  auto p = problem_shape(make_grouped_n(12, 1024, 8192, 2048));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->kind, OperationKind::grouped_n);
  EXPECT_EQ(p->m, 1024);
  EXPECT_EQ(p->n, 8192);
  EXPECT_EQ(p->k, 2048);
  EXPECT_EQ(p->groups, 12);
  EXPECT_DOUBLE_EQ(p->flops(), 2.0 * 1024 * 8192 * 2048);
}

TEST(ProblemShape, grouped_k_uses_total_k_and_g) {
  auto p = problem_shape(make_grouped_k(12, 1024, 2048, 8192));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->kind, OperationKind::grouped_k);
  EXPECT_EQ(p->m, 1024);
  EXPECT_EQ(p->n, 2048);
  EXPECT_EQ(p->k, 8192);
  EXPECT_EQ(p->groups, 12);
}

}  // namespace
}  // namespace gemmops
