// tests/unit/test_autotune.cpp: autotune orders by measured time, keeps failures last with reasons
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>

#include "gemmops/autotune.hpp"
#include "gemmops/registry.hpp"
#include "support/fake_operator.hpp"
#include "support/problems.hpp"
#include "support/random_problems.hpp"

namespace gemmops {
namespace {

using testing::FakeOperator;

OperatorPtr fake(const std::string& name, Status extra = Status::ok(), std::string artifact_name = "") {
  FakeOperator::Options o;
  o.name = name;
  o.extra = std::move(extra);
  o.artifact_name = std::move(artifact_name);
  return FakeOperator::make(std::move(o));
}

// Times by name, so the test decides which operator is fastest.
RunTimer timer_from(std::map<std::string, double> us) {
  return [us](const Operator& op, const Arguments&, const Artifact&, const AutotuneOptions&) -> Result<double> {
    auto it = us.find(op.name());
    if (it == us.end()) return driver_error("timer: " + op.name() + " failed to launch");
    return it->second;
  };
}

TEST(Autotune, times_a_trial_design_only_on_request) {
  const Arguments args = testing::make_gemm(64, 64, 64, DType::bf16, DType::bf16, Device::cpu());
  FakeOperator::Options o;
  o.name = "trial", o.trial = true;
  const OperatorPtr trial = FakeOperator::make(o);
  const RunTimer timer = timer_from({{"trial", 1.0}, {"verified", 2.0}});
  auto tuned = autotune(args, {trial, fake("verified")}, {}, timer);
  ASSERT_EQ(tuned.size(), 2u);
  EXPECT_EQ(tuned[0].op->name(), "verified");  // the trial one is not timed, so it comes last, failed
  EXPECT_FALSE(tuned[1].status);
  EXPECT_NE(tuned[1].status.message().find("include_trial"), std::string::npos) << tuned[1].status.message();
  AutotuneOptions on_request;
  on_request.include_trial = true;
  tuned = autotune(args, {trial, fake("verified")}, on_request, timer);
  ASSERT_TRUE(tuned[0].status) << tuned[0].status.to_string();
  EXPECT_EQ(tuned[0].op->name(), "trial");
}

// Compiles that record how many run at once; each waits (up to `wait`) for a second one to start.
struct CompileOverlap {
  std::atomic<int> in_flight{0}, most{0};
  std::chrono::milliseconds wait;
  void operator()() {
    const int now = ++in_flight;
    for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
    }
    const auto until = std::chrono::steady_clock::now() + wait;
    while (most.load() < 2 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    --in_flight;
  }
};

std::vector<OperatorPtr> overlap_recorders(CompileOverlap& overlap, int count) {
  std::vector<OperatorPtr> ops;
  for (int i = 0; i < count; ++i) {
    FakeOperator::Options o;
    o.name = "op" + std::to_string(i);
    o.on_compile = [&overlap] { overlap(); };
    ops.push_back(FakeOperator::make(o));
  }
  return ops;
}

TEST(Autotune, compiles_the_candidates_side_by_side_each_once) {
  // A cold kernel cache compiles each candidate for seconds: one by one, twenty took minutes.
  const Arguments args = testing::make_gemm(64, 64, 64, DType::bf16, DType::bf16, Device::cpu());
  CompileOverlap overlap;
  overlap.wait = std::chrono::milliseconds(5000);
  const auto ops = overlap_recorders(overlap, 4);
  AutotuneOptions o;
  o.compile_threads = 4;
  const auto tuned = autotune(args, ops, o, timer_from({{"op0", 4}, {"op1", 3}, {"op2", 2}, {"op3", 1}}));
  EXPECT_GE(overlap.most.load(), 2);
  for (const OperatorPtr& op : ops) EXPECT_EQ(static_cast<const FakeOperator&>(*op).compile_calls.load(), 1) << op->name();
  ASSERT_EQ(tuned.size(), 4u);
  EXPECT_EQ(tuned[0].op->name(), "op3");
  EXPECT_TRUE(tuned[0].status) << tuned[0].status.to_string();
}

TEST(Autotune, a_compile_that_throws_fails_its_candidate_with_the_text) {
  const Arguments args = testing::make_gemm(64, 64, 64, DType::bf16, DType::bf16, Device::cpu());
  FakeOperator::Options o;
  o.name = "throws";
  o.on_compile = [] { throw std::runtime_error("no kernel today"); };
  AutotuneOptions options;
  options.compile_threads = 2;
  const auto tuned = autotune(args, {FakeOperator::make(o), fake("ok")}, options, timer_from({{"ok", 1.0}}));
  ASSERT_EQ(tuned.size(), 2u);
  EXPECT_EQ(tuned[0].op->name(), "ok");
  EXPECT_FALSE(tuned[1].status);
  EXPECT_NE(tuned[1].status.message().find("throws: compile threw: no kernel today"), std::string::npos)
      << tuned[1].status.message();
}

TEST(Autotune, compiles_one_by_one_when_asked) {
  // For user operators whose compile is not safe beside another's.
  const Arguments args = testing::make_gemm(64, 64, 64, DType::bf16, DType::bf16, Device::cpu());
  CompileOverlap overlap;
  overlap.wait = std::chrono::milliseconds(20);
  const auto ops = overlap_recorders(overlap, 3);
  AutotuneOptions o;
  o.compile_threads = 1;
  const auto tuned = autotune(args, ops, o, timer_from({{"op0", 1}, {"op1", 2}, {"op2", 3}}));
  EXPECT_EQ(overlap.most.load(), 1);
  for (const OperatorPtr& op : ops) EXPECT_EQ(static_cast<const FakeOperator&>(*op).compile_calls.load(), 1) << op->name();
  EXPECT_EQ(tuned.size(), 3u);
}

TEST(Autotune, orders_candidates_by_measured_time_not_by_position) {
  const Arguments args = testing::make_gemm(64, 64, 64, DType::bf16, DType::bf16, Device::cpu());
  const auto tuned = autotune(args, {fake("slow"), fake("fast"), fake("middle")}, {},
                              timer_from({{"slow", 30.0}, {"fast", 10.0}, {"middle", 20.0}}));
  ASSERT_EQ(tuned.size(), 3u);
  EXPECT_EQ(tuned[0].op->name(), "fast");
  EXPECT_EQ(tuned[1].op->name(), "middle");
  EXPECT_EQ(tuned[2].op->name(), "slow");
  EXPECT_DOUBLE_EQ(tuned[0].median_us, 10.0);
}

TEST(Autotune, equal_times_keep_the_candidates_order) {
  const Arguments args = testing::make_gemm(64, 64, 64, DType::bf16, DType::bf16, Device::cpu());
  const auto tuned = autotune(args, {fake("b"), fake("a"), fake("c")}, {}, timer_from({{"a", 5}, {"b", 5}, {"c", 5}}));
  ASSERT_EQ(tuned.size(), 3u);
  EXPECT_EQ(tuned[0].op->name(), "b");
  EXPECT_EQ(tuned[1].op->name(), "a");
  EXPECT_EQ(tuned[2].op->name(), "c");
}

TEST(Autotune, failures_come_last_with_their_reason_in_candidate_order) {
  const Arguments args = testing::make_gemm(64, 64, 64, DType::bf16, DType::bf16, Device::cpu());
  const auto tuned = autotune(args,
                              {fake("unsupported", unsupported("A: not for this test")), fake("times_out"),
                               fake("miscompiles", Status::ok(), "someone_else"), fake("ok")},
                              {}, timer_from({{"ok", 1.0}, {"miscompiles", 0.5}}));
  ASSERT_EQ(tuned.size(), 4u);
  EXPECT_EQ(tuned[0].op->name(), "ok");
  EXPECT_TRUE(tuned[0].status);
  EXPECT_EQ(tuned[1].op->name(), "unsupported");
  EXPECT_EQ(tuned[1].status.code(), ErrorCode::unsupported);
  EXPECT_NE(tuned[1].status.message().find("not for this test"), std::string::npos);
  EXPECT_EQ(tuned[2].op->name(), "times_out");
  EXPECT_EQ(tuned[2].status.code(), ErrorCode::driver_error);
  EXPECT_EQ(tuned[3].op->name(), "miscompiles");
  EXPECT_FALSE(tuned[3].status);
}

TEST(Autotune, default_timer_runs_warmup_plus_iterations_on_host_tensors) {
  std::mt19937 rng(5);
  testing::ProblemSpec spec;
  spec.kind = OperationKind::gemm;
  spec.m = 16, spec.n = 16, spec.k = 16, spec.groups = 1;
  testing::HostProblem host = testing::make_problem(spec, rng);
  auto op = FakeOperator::make({});
  AutotuneOptions o;
  o.warmup = 2;
  o.iterations = 5;
  const auto tuned = autotune(host.arguments(), {op}, o);
  ASSERT_EQ(tuned.size(), 1u);
  ASSERT_TRUE(tuned[0].status) << tuned[0].status.to_string();
  EXPECT_EQ(op->run_calls.load(), 7);
  EXPECT_GE(tuned[0].median_us, 0.0);
}

TEST(Autotune, times_the_real_cpu_operator_on_a_small_problem) {
  std::mt19937 rng(6);
  testing::ProblemSpec spec;  // grouped_m with an empty and a 1-row group
  spec.a = spec.b = DType::fp32;
  spec.out = DType::fp32;
  testing::HostProblem host = testing::make_problem(spec, rng);
  const Arguments args = host.arguments();
  const auto tuned = autotune(args, get_operators(args), {.warmup = 1, .iterations = 3});
  ASSERT_FALSE(tuned.empty());
  EXPECT_TRUE(tuned[0].status) << tuned[0].status.to_string();
  EXPECT_EQ(tuned[0].op->metadata().provider, "cpu");
  EXPECT_GT(tuned[0].median_us, 0.0);
}

}  // namespace
}  // namespace gemmops
