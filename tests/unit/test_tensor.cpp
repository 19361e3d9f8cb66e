// tests/unit/test_tensor.cpp: TensorDesc sizes, spans, descriptions and matrix majors
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <limits>

#include "gemmops/tensor.hpp"

namespace gemmops {
namespace {

TEST(Device, prints_cpu_and_cuda_ordinal) {
  EXPECT_EQ(Device::cpu().to_string(), "cpu");
  EXPECT_EQ(Device::cuda(3).to_string(), "cuda:3");
  EXPECT_NE(Device::cuda(0), Device::cuda(1));
  EXPECT_NE(Device::cuda(0), Device::cpu());
}

TEST(TensorDesc, contiguous_is_row_major) {
  auto t = TensorDesc::contiguous(DType::bf16, {4, 8, 16});
  EXPECT_EQ(t.strides, (std::vector<int64_t>{128, 16, 1}));
  EXPECT_TRUE(t.is_fake());
  EXPECT_EQ(t.device, Device::cpu());
}

TEST(TensorDesc, contiguous_treats_zero_sizes_as_one_for_strides) {
  auto t = TensorDesc::contiguous(DType::fp32, {3, 0, 5});
  EXPECT_EQ(t.strides, (std::vector<int64_t>{5, 5, 1}));
}

TEST(TensorDesc, size_and_stride_count_negative_dims_from_the_end) {
  auto t = TensorDesc::contiguous(DType::fp32, {2, 3, 5});
  EXPECT_EQ(t.size(-1), 5);
  EXPECT_EQ(t.size(-3), 2);
  EXPECT_EQ(t.size(1), 3);
  EXPECT_EQ(t.stride(-2), 5);
  EXPECT_EQ(t.stride(0), 15);
}

TEST(TensorDescDeathTest, size_out_of_range_is_a_bug) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto t = TensorDesc::contiguous(DType::fp32, {2, 3});
  EXPECT_DEATH((void)t.size(2), "dimension out of range");
}

TEST(TensorDesc, numel_is_the_product_of_sizes) {
  EXPECT_EQ(TensorDesc::contiguous(DType::fp32, {2, 3, 5}).numel(), 30);
  EXPECT_EQ(TensorDesc::contiguous(DType::fp32, {2, 0, 5}).numel(), 0);
}

TEST(TensorDesc, span_bytes_covers_first_to_one_past_last_element) {
  EXPECT_EQ(TensorDesc::contiguous(DType::bf16, {4, 8}).span_bytes(), 64);
  // A padded row stride: 3 rows of 10 elements, last row only reaches column 7.
  TensorDesc padded(DType::fp32, {3, 8}, {10, 1}, Device::cpu());
  EXPECT_EQ(padded.span_bytes(), (2 * 10 + 7 + 1) * 4);
  TensorDesc broadcast(DType::fp32, {5, 8}, {0, 1}, Device::cpu());
  EXPECT_EQ(broadcast.span_bytes(), 32);
  EXPECT_EQ(TensorDesc::contiguous(DType::fp32, {0, 8}).span_bytes(), 0);
}

TEST(TensorDesc, span_bytes_saturates_instead_of_overflowing) {
  TensorDesc huge(DType::fp32, {int64_t{1} << 40, int64_t{1} << 40}, {int64_t{1} << 40, 1}, Device::cpu());
  EXPECT_EQ(huge.span_bytes(), std::numeric_limits<int64_t>::max());
}

TEST(TensorDesc, describe_names_dtype_shape_strides_device_and_fakeness) {
  auto t = TensorDesc::contiguous(DType::bf16, {8192, 1024}, Device::cuda(0));
  EXPECT_EQ(t.describe(), "bf16 (8192, 1024) strides (1024, 1) on cuda:0, fake");
  int x = 0;
  t.data = &x;
  EXPECT_EQ(t.describe(), "bf16 (8192, 1024) strides (1024, 1) on cuda:0");
}

TEST(TensorDesc, shape_string_uses_python_tuple_form) {
  EXPECT_EQ(TensorDesc::contiguous(DType::bf16, {8192, 1024}).shape_string(), "(8192, 1024)");
  EXPECT_EQ(TensorDesc::contiguous(DType::i32, {12}).shape_string(), "(12,)");
}

TEST(Major, names_say_which_dim_is_contiguous) {
  EXPECT_EQ(name(Major::k), "k-major");
  EXPECT_EQ(name(Major::mn), "mn-major");
}

TEST(MatrixMajor, row_major_a_is_k_major_and_row_major_b_is_mn_major) {
  auto a = TensorDesc::contiguous(DType::bf16, {64, 32});
  Major m;
  ASSERT_TRUE(matrix_major(a, /*cols_is_k=*/true, &m));
  EXPECT_EQ(m, Major::k);
  ASSERT_TRUE(matrix_major(a, /*cols_is_k=*/false, &m));
  EXPECT_EQ(m, Major::mn);
}

TEST(MatrixMajor, column_major_flips_the_answer) {
  TensorDesc a(DType::bf16, {64, 32}, {1, 64}, Device::cpu());
  Major m;
  ASSERT_TRUE(matrix_major(a, true, &m));
  EXPECT_EQ(m, Major::mn);
  ASSERT_TRUE(matrix_major(a, false, &m));
  EXPECT_EQ(m, Major::k);
}

TEST(MatrixMajor, one_by_one_is_row_major_and_batched_uses_last_two_dims) {
  TensorDesc one(DType::fp32, {1, 1}, {1, 1}, Device::cpu());
  Major m;
  ASSERT_TRUE(matrix_major(one, true, &m));
  EXPECT_EQ(m, Major::k);
  TensorDesc batched(DType::fp32, {4, 8, 16}, {128, 1, 8}, Device::cpu());
  ASSERT_TRUE(matrix_major(batched, true, &m));
  EXPECT_EQ(m, Major::mn);
}

TEST(MatrixMajor, neither_dim_contiguous_is_false) {
  TensorDesc t(DType::fp32, {8, 8}, {16, 2}, Device::cpu());
  Major m;
  EXPECT_FALSE(matrix_major(t, true, &m));
  EXPECT_FALSE(matrix_major(TensorDesc::contiguous(DType::fp32, {8}), true, &m));
}

}  // namespace
}  // namespace gemmops
