// tests/unit/test_problem_spec.cpp: the CLI's option parser (defaults, every option, usage errors)
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <initializer_list>
#include <string_view>
#include <vector>

#include "problem.hpp"
#include "problem_spec.hpp"

namespace gemmops::cli {
namespace {

Result<ProblemSpec> parse(std::initializer_list<std::string_view> words, SpecOptions which = SpecOptions::run) {
  std::vector<std::string_view> v(words);
  return parse_problem_spec(v, which);
}

std::string error_of(std::initializer_list<std::string_view> words, SpecOptions which = SpecOptions::run) {
  Result<ProblemSpec> r = parse(words, which);
  EXPECT_FALSE(r.has_value());
  return r.status().message();
}

TEST(ProblemSpec, defaults_are_the_seed_problem) {
  Result<ProblemSpec> r = parse({});
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_EQ(r->op, OperationKind::grouped_m);
  EXPECT_EQ(r->total_m, 8192);
  EXPECT_EQ(r->groups, 12);
  EXPECT_EQ(r->k, 1024);
  EXPECT_EQ(r->n, 2048);
  EXPECT_EQ(r->dtype, DType::bf16);
  EXPECT_EQ(r->out_dtype, DType::bf16);
  EXPECT_EQ(r->b_major, Major::k);
  EXPECT_EQ(r->dist, Distribution::uniform);
  EXPECT_EQ(r->device, DeviceChoice::automatic);
  EXPECT_TRUE(r->check);
  EXPECT_FALSE(r->help);
  EXPECT_FALSE(r->iters.has_value());
}

TEST(ProblemSpec, every_option_sets_its_field) {
  Result<ProblemSpec> r = parse({"--op", "grouped_k", "--total-m=64", "--groups", "3", "--k", "96", "--n", "48",
                                 "--dist", "skewed", "--seed", "7", "--dtype", "fp16", "--out-dtype", "fp32",
                                 "--b-major", "n", "--device", "cpu", "--operator", "x", "--iters", "4",
                                 "--warmup", "0", "--no-check"});
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_EQ(r->op, OperationKind::grouped_k);
  EXPECT_EQ(r->total_m, 64);
  EXPECT_EQ(r->groups, 3);
  EXPECT_EQ(r->k, 96);
  EXPECT_EQ(r->n, 48);
  EXPECT_EQ(r->dist, Distribution::skewed);
  EXPECT_EQ(r->seed, 7u);
  EXPECT_EQ(r->dtype, DType::fp16);
  EXPECT_EQ(r->out_dtype, DType::fp32);
  EXPECT_EQ(r->b_major, Major::mn);
  EXPECT_EQ(r->device, DeviceChoice::cpu);
  EXPECT_EQ(r->operator_name, "x");
  EXPECT_EQ(r->iters, 4);
  EXPECT_EQ(r->warmup, 0);
  EXPECT_FALSE(r->check);
}

TEST(ProblemSpec, out_dtype_follows_dtype_unless_given) {
  EXPECT_EQ(parse({"--dtype", "fp16"})->out_dtype, DType::fp16);
  EXPECT_EQ(parse({"--dtype", "e4m3"})->out_dtype, DType::bf16);
  EXPECT_EQ(parse({"--out-dtype", "fp32", "--dtype", "fp16"})->out_dtype, DType::fp32);
}

TEST(ProblemSpec, bad_values_are_usage_errors_naming_the_option) {
  EXPECT_EQ(error_of({"--dtype", "int8"}), "--dtype: must be one of bf16|fp16|fp32|e4m3; got 'int8'");
  EXPECT_EQ(error_of({"--op", "conv"}), "--op: must be one of grouped_m|grouped_k|grouped_n|gemm|batched|masked; got 'conv'");
  EXPECT_EQ(error_of({"--groups", "0"}), "--groups: must be an integer >= 1; got '0'");
  EXPECT_EQ(error_of({"--total-m", "12x"}), "--total-m: must be an integer >= 0; got '12x'");
  EXPECT_EQ(error_of({"--k", "-1"}), "--k: must be an integer >= 0; got '-1'");
  EXPECT_EQ(error_of({"--n"}), "--n: needs a value");
  EXPECT_EQ(error_of({"--no-check=1"}), "--no-check: takes no value");
  EXPECT_EQ(error_of({"--frobnicate"}), "unknown option '--frobnicate'");
  EXPECT_EQ(error_of({"seed"}), "unexpected argument 'seed'");
}

TEST(ProblemSpec, out_dtype_offers_only_what_out_may_be) {
  EXPECT_EQ(error_of({"--dtype", "e4m3", "--out-dtype", "e4m3"}), "--out-dtype: must be one of bf16|fp16|fp32; got 'e4m3'");
  EXPECT_EQ(problem_spec_help(SpecOptions::run).find("e4m3 (as --dtype"), std::string::npos);
}

TEST(ProblemSpec, batched_rows_must_divide_into_the_batches) {
  EXPECT_EQ(error_of({"--op", "batched", "--total-m", "100", "--groups", "12"}),
            "--total-m: must divide into the 12 batches of --groups (L) for --op batched; got '100'");
  Result<ProblemSpec> r = parse({"--op", "batched", "--total-m", "96", "--groups", "12"});
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_TRUE(parse({"--op", "grouped_m", "--total-m", "100", "--groups", "12"}).has_value());
  r = parse({"--op", "batched"});  // the default rows, in the default 8 batches
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_EQ(r->groups, 8);
  EXPECT_EQ(r->total_m % r->groups, 0);
}

TEST(ProblemSpec, target_is_accepted_by_list_only) {
  EXPECT_EQ(error_of({"--target", "90a"}, SpecOptions::run), "unknown option '--target'");
  Result<ProblemSpec> r = parse({"--target", "90a"}, SpecOptions::list);
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_EQ(r->target, "90a");
  EXPECT_EQ(error_of({"--target", "banana"}, SpecOptions::list),
            "--target: must be a target such as 90a or cpu; got 'banana'");
}

TEST(ProblemSpec, help_flag_is_recognised_anywhere) {
  EXPECT_TRUE(parse({"--k", "8", "--help"})->help);
  EXPECT_TRUE(parse({"-h"})->help);
}

TEST(ProblemOffsets, every_distribution_covers_exactly_the_total) {
  for (Distribution d : {Distribution::uniform, Distribution::skewed, Distribution::zipf}) {
    std::vector<int32_t> off = make_offsets(d, 8192, 12, 3);
    ASSERT_EQ(off.size(), 12u);
    EXPECT_EQ(off.back(), 8192) << name(d);
    for (size_t i = 1; i < off.size(); ++i) EXPECT_LE(off[i - 1], off[i]) << name(d);
  }
  std::vector<int32_t> empty = make_offsets(Distribution::empty, 8192, 12, 3);
  EXPECT_EQ(empty, std::vector<int32_t>(12, 0));
}

TEST(ProblemOffsets, skewed_has_empty_groups_and_depends_on_the_seed) {
  std::vector<int32_t> off = make_offsets(Distribution::skewed, 8192, 12, 3);
  int empty = off[0] == 0;
  for (size_t i = 1; i < off.size(); ++i) empty += off[i] == off[i - 1];
  EXPECT_GE(empty, 3);
  EXPECT_NE(off, make_offsets(Distribution::skewed, 8192, 12, 4));
  EXPECT_EQ(off, make_offsets(Distribution::skewed, 8192, 12, 3));
}

TEST(ProblemLayout, b_k_major_is_the_permuted_gnk_tensor) {
  ProblemSpec spec;
  Arguments args = fake_arguments(spec, Device::cpu());
  const TensorDesc& b = operand_b(args);
  EXPECT_EQ(b.shape, (std::vector<int64_t>{12, 1024, 2048}));
  EXPECT_EQ(b.strides, (std::vector<int64_t>{2048 * 1024, 1, 1024}));
  EXPECT_TRUE(validate(args).is_ok()) << validate(args).to_string();
  spec.b_major = Major::mn;
  EXPECT_EQ(operand_b(fake_arguments(spec, Device::cpu())).strides, (std::vector<int64_t>{2048 * 1024, 2048, 1}));
}

TEST(ProblemLayout, grouped_n_stacks_the_groups_of_a_and_splits_the_columns) {
  ProblemSpec spec;
  spec.op = OperationKind::grouped_n, spec.total_m = 64, spec.groups = 4, spec.k = 32, spec.n = 256;
  spec.device = DeviceChoice::cpu, spec.dist = Distribution::skewed;
  Arguments args = fake_arguments(spec, Device::cpu());
  EXPECT_EQ(operand_a(args).shape, (std::vector<int64_t>{4, 64, 32}));
  EXPECT_EQ(operand_b(args).shape, (std::vector<int64_t>{32, 256}));
  EXPECT_EQ(operand_out(args).shape, (std::vector<int64_t>{64, 256}));
  EXPECT_TRUE(validate(args).is_ok()) << validate(args).to_string();
  Result<Problem> p = make_problem(spec, Device::cpu());
  ASSERT_TRUE(p) << p.status().to_string();
  ASSERT_EQ(p->offsets.size(), 4u);
  EXPECT_EQ(p->offsets.back(), 256);  // the distribution splits TotalN
  EXPECT_DOUBLE_EQ(p->flops(), 2.0 * 64 * 256 * 32);
  EXPECT_TRUE(p->written(255));       // row 0, last column
  p->offsets.back() = 200;            // columns 200.. are past the last group, in every row
  EXPECT_FALSE(p->written(200));
  EXPECT_FALSE(p->written(256 + 255));
  EXPECT_TRUE(p->written(256 + 199));
  EXPECT_EQ(p->covered(), 64 * 200);
}

}  // namespace
}  // namespace gemmops::cli
