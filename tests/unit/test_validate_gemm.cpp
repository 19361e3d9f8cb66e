// tests/unit/test_validate_gemm.cpp: one test per rule of dense and batched GEMM, asserting its message
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <vector>

#include "gemmops/arguments.hpp"
#include "support/invalid.hpp"
#include "support/problems.hpp"

namespace gemmops {
namespace {

using testing::make_batched;
using testing::make_gemm;

using testing::invalid;

TEST(ValidateGemm, valid_gemm_and_batched_pass) {
  EXPECT_TRUE(validate(make_gemm(8192, 2048, 1024)));
  EXPECT_TRUE(validate(make_batched(4, 128, 64, 32)));
  EXPECT_TRUE(validate(make_gemm(0, 0, 0)));
}

TEST(ValidateGemm, operands_must_have_rank_1_to_3) {
  auto g = make_gemm(8, 8, 8);
  g.A = TensorDesc::contiguous(DType::bf16, {2, 2, 2, 2});
  EXPECT_EQ(invalid(g), "A: rank must be 1 to 3; got rank 4 with shape (2, 2, 2, 2)");
  g = make_gemm(8, 8, 8);
  g.out = TensorDesc();
  EXPECT_EQ(invalid(g), "out: rank must be 1 to 3; got rank 0 with shape ()");
}

TEST(ValidateGemm, ranks_must_be_2_2_2_or_3_3_3) {
  auto g = make_gemm(8, 8, 8);
  g.B = TensorDesc::contiguous(DType::bf16, {1, 8, 8});
  EXPECT_EQ(invalid(g), "A, B, out: ranks must be 2/2/2 (gemm) or 3/3/3 (batched_gemm); got 2/3/2");
}

TEST(ValidateGemm, strides_must_match_the_rank) {
  auto g = make_gemm(8, 8, 8);
  g.B.strides = {8, 1, 1};
  EXPECT_EQ(invalid(g), "B: must have one stride per dimension (2); got strides (8, 1, 1) for shape (8, 8)");
}

TEST(ValidateGemm, sizes_must_be_non_negative) {
  auto g = make_gemm(8, 8, 8);
  g.A.shape = {-1, 8};
  EXPECT_EQ(invalid(g), "A: sizes must be non-negative; got shape (-1, 8)");
}

TEST(ValidateGemm, strides_must_be_non_negative) {
  auto g = make_gemm(8, 8, 8);
  g.out.strides = {-8, 1};
  EXPECT_EQ(invalid(g), "out: strides must be non-negative; got strides (-8, 1)");
}

TEST(ValidateGemm, byte_span_must_fit_in_int64) {
  auto g = make_gemm(8, 8, 8);
  g.A.strides = {int64_t{1} << 62, 1};
  EXPECT_EQ(invalid(g), "A: byte span must fit in int64; got shape (8, 8) strides (4611686018427387904, 1) of bf16");
}

TEST(ValidateGemm, element_count_must_fit_in_int64) {
  auto g = make_gemm(8, 8, 8);
  g.B = TensorDesc(DType::bf16, {int64_t{1} << 32, int64_t{1} << 32}, {0, 0}, Device::cpu());
  EXPECT_EQ(invalid(g), "B: byte span must fit in int64; got shape (4294967296, 4294967296) strides (0, 0) of bf16");
}

TEST(ValidateGemm, b_k_must_equal_a_k) {
  auto g = make_gemm(8192, 2048, 2048);
  g.B = TensorDesc::contiguous(DType::bf16, {1024, 2048});
  EXPECT_EQ(invalid(g), "B: K (1024) must equal A's K (2048); A (M,K) = (8192, 2048), B (K,N) = (1024, 2048)");
}

TEST(ValidateGemm, out_m_must_equal_a_m) {
  auto g = make_gemm(64, 32, 16);
  g.out = TensorDesc::contiguous(DType::bf16, {63, 32});
  EXPECT_EQ(invalid(g), "out: M (63) must equal A's M (64); A (M,K) = (64, 16), out (M,N) = (63, 32)");
}

TEST(ValidateGemm, out_n_must_equal_b_n) {
  auto g = make_gemm(64, 32, 16);
  g.out = TensorDesc::contiguous(DType::bf16, {64, 31});
  EXPECT_EQ(invalid(g), "out: N (31) must equal B's N (32); B (K,N) = (16, 32), out (M,N) = (64, 31)");
}

TEST(ValidateBatched, b_l_must_equal_a_l) {
  auto g = make_batched(4, 8, 8, 8);
  g.B = TensorDesc::contiguous(DType::bf16, {3, 8, 8});
  EXPECT_EQ(invalid(g), "B: L (3) must equal A's L (4); A (L,M,K) = (4, 8, 8), B (L,K,N) = (3, 8, 8)");
}

TEST(ValidateBatched, out_l_must_equal_a_l) {
  auto g = make_batched(4, 8, 8, 8);
  g.out = TensorDesc::contiguous(DType::bf16, {5, 8, 8});
  EXPECT_EQ(invalid(g), "out: L (5) must equal A's L (4); A (L,M,K) = (4, 8, 8), out (L,M,N) = (5, 8, 8)");
}

TEST(ValidateBatched, b_k_must_equal_a_k) {
  auto g = make_batched(2, 8, 8, 16);
  g.B = TensorDesc::contiguous(DType::bf16, {2, 15, 8});
  EXPECT_EQ(invalid(g), "B: K (15) must equal A's K (16); A (L,M,K) = (2, 8, 16), B (L,K,N) = (2, 15, 8)");
}

TEST(ValidateBatched, out_m_and_n_must_match) {
  auto g = make_batched(2, 8, 4, 16);
  g.out = TensorDesc::contiguous(DType::bf16, {2, 9, 4});
  EXPECT_EQ(invalid(g), "out: M (9) must equal A's M (8); A (L,M,K) = (2, 8, 16), out (L,M,N) = (2, 9, 4)");
  g.out = TensorDesc::contiguous(DType::bf16, {2, 8, 5});
  EXPECT_EQ(invalid(g), "out: N (5) must equal B's N (4); B (L,K,N) = (2, 16, 4), out (L,M,N) = (2, 8, 5)");
}

TEST(ValidateCommon, int32_operands_are_refused) {
  auto g = make_gemm(8, 8, 8, DType::i32, DType::fp32);
  EXPECT_EQ(invalid(g),
            "A: int32 operands are not supported; dtype must be one of bf16, fp16, fp32, e4m3, e5m2; got int32");
  g = make_gemm(8, 8, 8, DType::bf16, DType::i32);
  EXPECT_EQ(invalid(g), "out: int32 outputs are not supported; dtype must be one of bf16, fp16, fp32; got int32");
}

TEST(ValidateCommon, a_and_b_dtypes_must_match) {
  auto g = make_gemm(8, 8, 8, DType::bf16);
  g.B.dtype = DType::fp16;
  EXPECT_EQ(invalid(g), "B: dtype must equal A's dtype (bf16), or both must be fp8 (e4m3, e5m2); got fp16");
}

TEST(ValidateCommon, fp8_a_and_b_may_mix) {
  auto g = make_gemm(8, 8, 8, DType::e4m3);
  g.B.dtype = DType::e5m2;
  EXPECT_TRUE(validate(g));
}

TEST(ValidateCommon, out_must_be_bf16_fp16_or_fp32) {
  auto g = make_gemm(8, 8, 8, DType::e4m3, DType::e4m3);
  EXPECT_EQ(invalid(g), "out: dtype must be one of bf16, fp16, fp32; got e4m3");
}

TEST(ValidateCommon, accumulator_must_be_fp32) {
  auto g = make_gemm(8, 8, 8);
  g.accumulator = DType::fp16;
  EXPECT_EQ(invalid(g), "accumulator: must be fp32; got fp16");
}

TEST(ValidateCommon, operands_must_share_a_device) {
  auto g = make_gemm(8, 8, 8, DType::bf16, DType::bf16, Device::cuda(0));
  g.B.device = Device::cuda(1);
  EXPECT_EQ(invalid(g), "B: must be on A's device (cuda:0); got cuda:1");
  g.B.device = Device::cuda(0);
  g.out.device = Device::cpu();
  EXPECT_EQ(invalid(g), "out: must be on A's device (cuda:0); got cpu");
}

TEST(ValidateCommon, out_must_not_have_a_zero_stride_on_a_dim_of_size_above_one) {
  auto g = make_gemm(8, 4, 8);
  g.out.strides = {0, 1};
  EXPECT_EQ(invalid(g), "out: elements must not overlap; got stride 0 on dimension 0 of size 8, strides (0, 1)");
  g = make_gemm(1, 4, 8);
  g.out.strides = {0, 1};  // a dimension of size 1 never steps
  EXPECT_TRUE(validate(g));
}

// numpy gives every array without elements zero strides; such an out overlaps nothing.
TEST(ValidateCommon, an_out_without_elements_may_have_any_strides) {
  auto g = make_gemm(0, 16, 8);  // M = 0
  g.A.strides = {0, 0};
  g.out.strides = {0, 0};
  EXPECT_TRUE(validate(g));
  g = make_gemm(8, 0, 8);  // N = 0
  g.B.strides = {0, 0};
  g.out.strides = {0, 0};
  EXPECT_TRUE(validate(g));
  auto b = make_batched(0, 8, 8, 8);  // L = 0
  b.A.strides = b.B.strides = b.out.strides = {0, 0, 0};
  EXPECT_TRUE(validate(b));
}

TEST(ValidateCommon, out_elements_must_not_interleave) {
  auto g = make_gemm(4, 4, 8);
  g.out.strides = {2, 1};
  EXPECT_EQ(invalid(g), "out: elements must not overlap (each stride must step past the extent of the smaller "
                        "ones); got shape (4, 4) strides (2, 1)");
  g.out.strides = {1, 4};  // column-major is fine
  EXPECT_TRUE(validate(g));
  g.out.strides = {7, 1};  // padded rows are fine
  EXPECT_TRUE(validate(g));
}

TEST(ValidateCommon, inputs_may_broadcast_with_zero_strides) {
  auto g = make_gemm(8, 8, 8);
  g.A.strides = {0, 1};
  EXPECT_TRUE(validate(g));
}

TEST(ValidateCommon, out_must_not_overlap_a_in_memory) {
  std::vector<uint16_t> buf(256);
  auto g = make_gemm(8, 8, 8);
  g.A.data = buf.data();
  g.B.data = buf.data() + 64;
  g.out.data = buf.data() + 32;  // out [32, 96) elements overlaps A [0, 64)
  std::string m = invalid(g);
  EXPECT_EQ(m.rfind("out: must not overlap A in memory; out spans [0x", 0), 0u) << m;
  EXPECT_NE(m.find(", A spans [0x"), std::string::npos) << m;
}

TEST(ValidateCommon, out_must_not_overlap_b_in_memory) {
  std::vector<uint16_t> buf(256);
  auto g = make_gemm(8, 8, 8);
  g.A.data = buf.data();
  g.B.data = buf.data() + 64;
  g.out.data = buf.data() + 127;  // one element into B's last one
  std::string m = invalid(g);
  EXPECT_EQ(m.rfind("out: must not overlap B in memory", 0), 0u) << m;
}

TEST(ValidateCommon, adjacent_buffers_do_not_overlap) {
  std::vector<uint16_t> buf(192);
  auto g = make_gemm(8, 8, 8);
  g.A.data = buf.data();
  g.B.data = buf.data() + 64;
  g.out.data = buf.data() + 128;
  EXPECT_TRUE(validate(g));
}

TEST(OperationKind, follows_from_the_ranks) {
  EXPECT_EQ(*operation_kind(make_gemm(8, 8, 8)), OperationKind::gemm);
  EXPECT_EQ(*operation_kind(make_batched(2, 8, 8, 8)), OperationKind::batched_gemm);
  EXPECT_EQ(name(OperationKind::gemm), "gemm");
  EXPECT_EQ(name(OperationKind::batched_gemm), "batched_gemm");
  EXPECT_EQ(name(OperationKind::grouped_m), "grouped_gemm_m");
  EXPECT_EQ(name(OperationKind::grouped_k), "grouped_gemm_k");
}

TEST(ProblemShape, gemm_and_batched_sizes) {
  auto p = problem_shape(make_gemm(64, 32, 16));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->kind, OperationKind::gemm);
  EXPECT_EQ(p->m, 64);
  EXPECT_EQ(p->n, 32);
  EXPECT_EQ(p->k, 16);
  EXPECT_EQ(p->groups, 1);
  EXPECT_DOUBLE_EQ(p->flops(), 2.0 * 64 * 32 * 16);
  auto b = problem_shape(make_batched(3, 64, 32, 16));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->groups, 3);
  EXPECT_EQ(b->m, 64);
}

TEST(ProblemShape, invalid_arguments_give_the_validation_failure) {
  auto g = make_gemm(8, 8, 8);
  g.accumulator = DType::bf16;
  EXPECT_EQ(problem_shape(g).status().message(), "accumulator: must be fp32; got bf16");
}

TEST(Majors, row_major_a_is_k_major_and_transposed_b_is_k_major) {
  auto g = make_gemm(8, 4, 16);
  g.B = TensorDesc(DType::bf16, {16, 4}, {1, 16}, Device::cpu());  // B stored as (N,K)
  Major a, b;
  ASSERT_TRUE(a_major(g, &a));
  ASSERT_TRUE(b_major(g, &b));
  EXPECT_EQ(a, Major::k);
  EXPECT_EQ(b, Major::k);
}

TEST(Accessors, return_the_operands_of_either_argument_type) {
  Arguments args = make_gemm(8, 4, 16);
  const auto& g = std::get<GemmArguments>(args);
  EXPECT_EQ(&operand_a(args), &g.A);
  EXPECT_EQ(&operand_b(args), &g.B);
  EXPECT_EQ(&operand_out(args), &g.out);
  EXPECT_EQ(accumulator_of(args), DType::fp32);
  Arguments grouped = testing::make_grouped_m(2, 8, 4, 16);
  EXPECT_EQ(&operand_b(grouped), &std::get<GroupedGemmArguments>(grouped).B);
}

}  // namespace
}  // namespace gemmops
