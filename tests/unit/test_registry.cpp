// tests/unit/test_registry.cpp: discovery order, stability, reasons, and bring-your-own operators
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>
#include <string>

#include "gemmops/registry.hpp"
#include "support/fake_operator.hpp"
#include "support/problems.hpp"

namespace gemmops {
namespace {

using testing::FakeOperator;
using testing::make_gemm;
using testing::make_grouped_m;

OperatorPtr fake(std::string name, double estimate_us, std::vector<DType> a_dtypes = {}) {
  FakeOperator::Options o;
  o.name = std::move(name);
  o.estimate_us = estimate_us;
  o.constraints.a_dtypes = std::move(a_dtypes);
  return FakeOperator::make(o);
}

std::vector<std::string> names(const std::vector<OperatorPtr>& ops) {
  std::vector<std::string> out;
  for (const auto& op : ops) out.push_back(op->name());
  return out;
}

TEST(Registry, get_operators_orders_by_estimated_time) {
  Registry r;
  ASSERT_TRUE(r.add(fake("slow", 30.0)));
  ASSERT_TRUE(r.add(fake("fast", 10.0)));
  ASSERT_TRUE(r.add(fake("medium", 20.0)));
  EXPECT_EQ(names(r.get_operators(make_gemm(8, 8, 8), Target::cpu())),
            (std::vector<std::string>{"fast", "medium", "slow"}));
}

TEST(Registry, ties_and_unknown_estimates_keep_registration_order) {
  Registry r;
  const double inf = std::numeric_limits<double>::infinity();
  ASSERT_TRUE(r.add(fake("unknown_a", inf)));
  ASSERT_TRUE(r.add(fake("tie_a", 5.0)));
  ASSERT_TRUE(r.add(fake("nan", std::numeric_limits<double>::quiet_NaN())));
  ASSERT_TRUE(r.add(fake("tie_b", 5.0)));
  ASSERT_TRUE(r.add(fake("unknown_b", inf)));
  const std::vector<std::string> want{"tie_a", "tie_b", "unknown_a", "nan", "unknown_b"};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(names(r.get_operators(make_gemm(8, 8, 8), Target::cpu())), want);
}

TEST(Registry, every_returned_operator_supports_the_arguments) {
  Registry r;
  ASSERT_TRUE(r.add(fake("bf16_only", 1.0, {DType::bf16})));
  ASSERT_TRUE(r.add(fake("fp32_only", 1.0, {DType::fp32})));
  ASSERT_TRUE(r.add(fake("any", 2.0)));
  for (DType t : {DType::bf16, DType::fp32, DType::fp16}) {
    auto args = make_gemm(8, 8, 8, t, DType::fp32);
    auto ops = r.get_operators(args, Target::cpu());
    EXPECT_EQ(ops.size(), 2u - (t == DType::fp16 ? 1u : 0u)) << name(t);
    for (const auto& op : ops) EXPECT_TRUE(op->supports(args, Target::cpu())) << op->name();
  }
}

TEST(Registry, rejections_carry_the_first_failing_reason_in_registration_order) {
  Registry r;
  ASSERT_TRUE(r.add(fake("fp32_only", 1.0, {DType::fp32})));
  ASSERT_TRUE(r.add(fake("any", 1.0)));
  FakeOperator::Options gpu;
  gpu.name = "gpu_only";
  gpu.target = Target::sm(90, true);
  ASSERT_TRUE(r.add(FakeOperator::make(gpu)));
  auto rej = r.rejections(make_gemm(8, 8, 8), Target::cpu());
  ASSERT_EQ(rej.size(), 2u);
  EXPECT_EQ(rej[0].op->name(), "fp32_only");
  EXPECT_EQ(rej[0].reason.message(), "A: dtype must be one of fp32; got bf16");
  EXPECT_EQ(rej[1].op->name(), "gpu_only");
  EXPECT_EQ(rej[1].reason.message(), "target: gpu_only is built for 90a, which does not run on cpu");
}

TEST(Registry, invalid_arguments_reject_everything_with_the_validation_reason) {
  Registry r;
  ASSERT_TRUE(r.add(fake("any", 1.0)));
  auto g = make_gemm(8, 8, 8);
  g.accumulator = DType::bf16;
  EXPECT_TRUE(r.get_operators(g, Target::cpu()).empty());
  auto rej = r.rejections(g, Target::cpu());
  ASSERT_EQ(rej.size(), 1u);
  EXPECT_EQ(rej[0].reason.code(), ErrorCode::invalid_argument);
}

TEST(Registry, add_refuses_null_and_duplicate_names) {
  Registry r;
  EXPECT_EQ(r.add(nullptr).message(), "operator: must not be null");
  ASSERT_TRUE(r.add(fake("twice", 1.0)));
  Status s = r.add(fake("twice", 2.0));
  EXPECT_EQ(s.code(), ErrorCode::invalid_argument);
  EXPECT_EQ(s.message(), "operator: name must be unique; \"twice\" is already registered");
  EXPECT_EQ(r.all().size(), 1u);
}

TEST(Registry, find_and_all_see_what_was_added) {
  Registry r;
  auto op = fake("byo", 1.0);
  ASSERT_TRUE(r.add(op));
  EXPECT_EQ(r.find("byo"), op);
  EXPECT_EQ(r.find("nope"), nullptr);
  EXPECT_EQ(names(r.all()), std::vector<std::string>{"byo"});
}

TEST(Registry, a_byo_operator_is_found_on_a_fresh_registry) {
  Registry r;
  FakeOperator::Options o;
  o.name = "user_grouped";
  o.constraints.kinds = {OperationKind::grouped_m};
  o.estimate_us = 1.0;
  ASSERT_TRUE(r.add(FakeOperator::make(o)));
  EXPECT_EQ(names(r.get_operators(make_grouped_m(4, 64, 8, 8), Target::cpu())),
            std::vector<std::string>{"user_grouped"});
  EXPECT_TRUE(r.get_operators(make_gemm(8, 8, 8), Target::cpu()).empty());
}

TEST(DefaultRegistry, register_operator_makes_a_byo_operator_discoverable) {
  FakeOperator::Options o;
  o.name = "test_registry_byo_e5m2_only";
  o.constraints.a_dtypes = {DType::e5m2};
  o.constraints.a_b_same_dtype = false;
  o.estimate_us = 1e-9;  // faster than anything built in
  ASSERT_TRUE(register_operator(FakeOperator::make(o)));
  auto args = make_gemm(8, 8, 8, DType::e5m2, DType::bf16);
  auto ops = get_operators(args);
  ASSERT_FALSE(ops.empty());
  EXPECT_EQ(ops.front()->name(), "test_registry_byo_e5m2_only");
  EXPECT_EQ(register_operator(FakeOperator::make(o)).code(), ErrorCode::invalid_argument);
}

TEST(DefaultTarget, host_tensors_target_the_cpu) {
  auto t = default_target(make_gemm(8, 8, 8));
  ASSERT_TRUE(t);
  EXPECT_EQ(*t, Target::cpu());
}

// The environment is process-wide; these tests restore it.
struct TargetEnv {
  std::string saved;
  bool had = false;
  explicit TargetEnv(const char* value) {
    if (const char* v = std::getenv("GEMMOPS_TARGET")) saved = v, had = true;
    if (value) setenv("GEMMOPS_TARGET", value, 1); else unsetenv("GEMMOPS_TARGET");
  }
  ~TargetEnv() {
    if (had) setenv("GEMMOPS_TARGET", saved.c_str(), 1); else unsetenv("GEMMOPS_TARGET");
  }
};

TEST(DefaultTarget, cuda_tensors_without_a_device_use_gemmops_target) {
  if (device_target(0)) GTEST_SKIP() << "a CUDA device is present; its target wins over GEMMOPS_TARGET";
  TargetEnv env("90a");
  auto t = default_target(make_gemm(8, 8, 8, DType::bf16, DType::bf16, Device::cuda(0)));
  ASSERT_TRUE(t) << t.status().to_string();
  EXPECT_EQ(*t, Target::sm(90, true));
}

TEST(DefaultTarget, cuda_tensors_without_device_or_env_are_no_device) {
  if (device_target(0)) GTEST_SKIP() << "a CUDA device is present";
  TargetEnv env(nullptr);
  auto args = make_gemm(8, 8, 8, DType::bf16, DType::bf16, Device::cuda(0));
  auto t = default_target(args);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.status().code(), ErrorCode::no_device);
  EXPECT_EQ(t.status().message().rfind("no CUDA device for cuda:0 (", 0), 0u) << t.status().message();
  EXPECT_NE(t.status().message().find(") and GEMMOPS_TARGET is unset"), std::string::npos);
  EXPECT_TRUE(get_operators(args).empty());
  auto rej = get_rejections(args);
  ASSERT_EQ(rej.size(), 1u);
  EXPECT_EQ(rej[0].op, nullptr);
  EXPECT_EQ(rej[0].reason.code(), ErrorCode::no_device);
}

TEST(DefaultTarget, a_bad_gemmops_target_is_reported) {
  if (device_target(0)) GTEST_SKIP() << "a CUDA device is present";
  TargetEnv env("hopper");
  auto t = default_target(make_gemm(8, 8, 8, DType::bf16, DType::bf16, Device::cuda(0)));
  ASSERT_FALSE(t);
  EXPECT_EQ(t.status().message(), "GEMMOPS_TARGET: target: must be \"cpu\" or a compute capability like \"90a\", "
                                  "\"90\" or \"80\", optionally with a machine model (\"90a:h100_sxm\"); got \"hopper\"");
}

}  // namespace
}  // namespace gemmops
