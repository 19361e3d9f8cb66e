// tests/unit/test_gather_reduce.cpp: gather_reduce() on the host (the sums the contract states, bit
// for bit, sentinels and the row limit adding nothing) and validate()'s rules, each error naming the
// operand
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "gemmops/moe.hpp"
#include "support/gather_reduce_problem.hpp"

namespace gemmops::testing {
namespace {

void expect_bits_equal(const HostTensor& got, const HostTensor& want) {
  ASSERT_EQ(got.storage.size(), want.storage.size());
  EXPECT_EQ(std::memcmp(got.storage.data(), want.storage.data(), got.storage.size()), 0);
}

TEST(GatherReduce, sums_each_tokens_choices_in_order_on_the_host) {
  for (DType in : {DType::bf16, DType::fp16, DType::fp32}) {
    for (DType out : {DType::bf16, DType::fp32}) {
      for (bool scores : {false, true}) {
        GatherReduceSpec s{in, out, 50, 9, 4, 24};
        s.scores = scores;
        s.row_pad = 3;
        auto p = GatherReduceProblem::make(s);
        ASSERT_TRUE(gather_reduce(p.arguments()));
        expect_bits_equal(p.out, p.expected());
      }
    }
  }
}

TEST(GatherReduce, rows_at_or_past_the_limit_and_sentinels_add_nothing) {
  GatherReduceSpec s{DType::bf16, DType::bf16, 40, 30, 8, 16};
  s.row_limit = 17;
  s.sentinel_share = 0.3;
  auto p = GatherReduceProblem::make(s);
  ASSERT_TRUE(gather_reduce(p.arguments()));
  expect_bits_equal(p.out, p.expected());
  // Every choice a sentinel: exact zeros.
  s.sentinel_share = 1.0;
  auto q = GatherReduceProblem::make(s);
  ASSERT_TRUE(gather_reduce(q.arguments()));
  for (int64_t i = 0; i < q.out.numel(); ++i) ASSERT_EQ(q.out.get(i), 0.0) << i;
}

TEST(GatherReduce, no_tokens_or_no_rows_is_fine) {
  auto p = GatherReduceProblem::make({DType::bf16, DType::bf16, 8, 0, 2, 16});
  EXPECT_TRUE(gather_reduce(p.arguments()));
  auto q = GatherReduceProblem::make({DType::bf16, DType::fp32, 0, 5, 2, 16});
  ASSERT_TRUE(gather_reduce(q.arguments()));
  for (int64_t i = 0; i < q.out.numel(); ++i) ASSERT_EQ(q.out.get(i), 0.0) << i;
}

void expect_refused(const GatherReduceArguments& a, const std::string& operand, const std::string& rule) {
  const Status s = validate(a);
  ASSERT_FALSE(s) << "accepted: " << operand << " " << rule;
  EXPECT_EQ(s.code(), ErrorCode::invalid_argument);
  EXPECT_EQ(s.message().rfind(operand + ":", 0), 0u) << s.message();
  EXPECT_NE(s.message().find(rule), std::string::npos) << s.message();
}

TEST(GatherReduce, validate_names_the_operand_and_the_rule) {
  auto p = GatherReduceProblem::make({DType::bf16, DType::bf16, 16, 4, 2, 8});
  p.spec.row_limit = 3;
  const GatherReduceArguments good = p.arguments();
  ASSERT_TRUE(validate(good));
  auto a = good;
  a.pair_rows.dtype = DType::fp32;
  expect_refused(a, "pair_rows", "int32");
  a = good;
  a.rows.dtype = DType::e4m3;
  expect_refused(a, "rows", "bf16, fp16 or fp32");
  a = good;
  a.out.shape = {5, 8};
  expect_refused(a, "out", "T");
  a = good;
  a.out.shape = {4, 9};
  expect_refused(a, "out", "H");
  a = good;
  a.scores->shape = {4, 3};
  a.scores->strides = {3, 1};
  expect_refused(a, "scores", "shape (T, k)");
  a = good;
  a.scores->dtype = DType::bf16;
  expect_refused(a, "scores", "fp32");
  a = good;
  a.rows.strides = {1, 16};
  expect_refused(a, "rows", "contiguous");
  a = good;
  a.pair_rows.strides = {1, 4};
  expect_refused(a, "pair_rows", "contiguous");
  a = good;
  a.pair_rows.device = Device::cuda(0);
  expect_refused(a, "pair_rows", "rows' device");
  a = good;
  a.row_limit->shape = {2};
  expect_refused(a, "row_limit", "one element");
  a = good;
  a.rows.shape = {16, 8, 1};
  a.rows.strides = {8, 1, 1};
  expect_refused(a, "rows", "(S, H)");
  a = good;
  a.out.data = a.rows.data;  // out on top of rows
  expect_refused(a, "out", "overlap");
}

TEST(GatherReduce, run_refuses_fake_tensors) {
  GatherReduceArguments a{TensorDesc::contiguous(DType::bf16, {8, 16}), TensorDesc::contiguous(DType::i32, {4, 2}),
                          std::nullopt, std::nullopt, TensorDesc::contiguous(DType::bf16, {4, 16})};
  EXPECT_TRUE(validate(a));
  const Status s = gather_reduce(a);
  EXPECT_EQ(s.code(), ErrorCode::invalid_argument);
  EXPECT_NE(s.message().find("data"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().rfind("rows: ", 0), 0u) << s.message();  // the operand first
}

}  // namespace
}  // namespace gemmops::testing
