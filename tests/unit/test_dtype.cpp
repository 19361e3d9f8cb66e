// tests/unit/test_dtype.cpp: dtype sizes, names and the aliases parse_dtype accepts
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "gemmops/dtype.hpp"

namespace gemmops {
namespace {

TEST(DType, names_round_trip_through_parse) {
  for (DType t : kAllDTypes) {
    auto parsed = parse_dtype(name(t));
    ASSERT_TRUE(parsed.has_value()) << name(t);
    EXPECT_EQ(*parsed, t);
  }
}

TEST(DType, names_are_the_documented_ones) {
  EXPECT_EQ(name(DType::bf16), "bf16");
  EXPECT_EQ(name(DType::fp16), "fp16");
  EXPECT_EQ(name(DType::fp32), "fp32");
  EXPECT_EQ(name(DType::e4m3), "e4m3");
  EXPECT_EQ(name(DType::e5m2), "e5m2");
  EXPECT_EQ(name(DType::i32), "int32");
}

TEST(DType, sizes_are_in_bytes) {
  EXPECT_EQ(size_of(DType::bf16), 2u);
  EXPECT_EQ(size_of(DType::fp16), 2u);
  EXPECT_EQ(size_of(DType::fp32), 4u);
  EXPECT_EQ(size_of(DType::i32), 4u);
  EXPECT_EQ(size_of(DType::e4m3), 1u);
  EXPECT_EQ(size_of(DType::e5m2), 1u);
}

TEST(DType, parse_accepts_torch_and_numpy_aliases) {
  EXPECT_EQ(parse_dtype("bfloat16"), DType::bf16);
  EXPECT_EQ(parse_dtype("torch.bfloat16"), DType::bf16);
  EXPECT_EQ(parse_dtype("float16"), DType::fp16);
  EXPECT_EQ(parse_dtype("half"), DType::fp16);
  EXPECT_EQ(parse_dtype("numpy.float16"), DType::fp16);
  EXPECT_EQ(parse_dtype("float32"), DType::fp32);
  EXPECT_EQ(parse_dtype("float"), DType::fp32);
  EXPECT_EQ(parse_dtype("np.float32"), DType::fp32);
  EXPECT_EQ(parse_dtype("float8_e4m3fn"), DType::e4m3);
  EXPECT_EQ(parse_dtype("torch.float8_e4m3fn"), DType::e4m3);
  EXPECT_EQ(parse_dtype("float8_e5m2"), DType::e5m2);
  EXPECT_EQ(parse_dtype("i32"), DType::i32);
  EXPECT_EQ(parse_dtype("torch.int32"), DType::i32);
  EXPECT_EQ(parse_dtype("BF16"), DType::bf16);
}

TEST(DType, parse_rejects_unknown_names) {
  EXPECT_FALSE(parse_dtype("").has_value());
  EXPECT_FALSE(parse_dtype("int64").has_value());
  EXPECT_FALSE(parse_dtype("float64").has_value());
  EXPECT_FALSE(parse_dtype("torch.").has_value());
  EXPECT_FALSE(parse_dtype("bf16 ").has_value());
}

TEST(DType, only_fp8_types_are_fp8_and_only_int32_is_not_floating) {
  EXPECT_TRUE(is_fp8(DType::e4m3));
  EXPECT_TRUE(is_fp8(DType::e5m2));
  EXPECT_FALSE(is_fp8(DType::bf16));
  EXPECT_FALSE(is_floating(DType::i32));
  EXPECT_TRUE(is_floating(DType::fp16));
}

}  // namespace
}  // namespace gemmops
