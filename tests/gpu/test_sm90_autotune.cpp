// tests/gpu/test_sm90_autotune.cpp: autotune() times the sm90 operators with CUDA events on a real
// problem, orders them by that time, and its pick computes the right result.
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "gemmops/autotune.hpp"
#include "gemmops/gemmops.hpp"
#include "support/compare.hpp"
#include "support/device_problem.hpp"
#include "support/fake_operator.hpp"
#include "support/random_problems.hpp"
#include "support/reference.hpp"

namespace gemmops::testing {
namespace {

TEST(Sm90Autotune, orders_the_gpu_operators_by_event_time_and_its_pick_is_correct) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  std::mt19937 rng(11);
  ProblemSpec spec;
  spec.kind = OperationKind::grouped_m;
  spec.m = 4096, spec.n = 1024, spec.k = 512, spec.groups = 8, spec.trailing = 64;
  HostProblem host = make_problem(spec, rng);
  auto dev = DeviceProblem::upload(host);
  ASSERT_TRUE(dev) << dev.status().to_string();
  const std::vector<OperatorPtr> candidates = get_operators(dev->args);
  ASSERT_GE(candidates.size(), 2u);
  const auto tuned = autotune(dev->args, candidates, {.warmup = 2, .iterations = 5});
  ASSERT_EQ(tuned.size(), candidates.size());
  for (size_t i = 0; i < tuned.size(); ++i) {
    ASSERT_TRUE(tuned[i].status) << tuned[i].op->name() << ": " << tuned[i].status.to_string();
    EXPECT_GT(tuned[i].median_us, 0.0) << tuned[i].op->name();
    // 2*4096*1024*512 FLOP is 4.3 GFLOP: no operator is faster than 2 us or slower than 5 ms.
    EXPECT_GT(tuned[i].median_us, 2.0) << tuned[i].op->name();
    EXPECT_LT(tuned[i].median_us, 5000.0) << tuned[i].op->name();
    if (i > 0) {
      EXPECT_LE(tuned[i - 1].median_us, tuned[i].median_us);
    }
  }
  // The pick, run once more on poisoned output, matches the reference.
  auto poisoned = DeviceProblem::upload(host);
  ASSERT_TRUE(poisoned);
  ASSERT_TRUE(poisoned->run(*tuned[0].op));
  ASSERT_TRUE(synchronize());
  auto out = poisoned->download_out(host.out);
  ASSERT_TRUE(out);
  const Comparison c = compare(*out, reference_result(host.arguments()), default_tolerance(spec.out, spec.k));
  EXPECT_TRUE(c.ok()) << tuned[0].op->name() << ": " << c.describe();
}

// On a GPU the candidates are timed round-robin (run i of each before run i + 1 of any), so drift
// over the timing falls on all alike: the runs of two operators that only record their order.
TEST(Sm90Autotune, times_gpu_candidates_round_robin) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  std::mt19937 rng(12);
  ProblemSpec spec;
  spec.kind = OperationKind::grouped_m;
  spec.m = 256, spec.n = 128, spec.k = 64, spec.groups = 2;
  HostProblem host = make_problem(spec, rng);
  auto dev = DeviceProblem::upload(host);
  ASSERT_TRUE(dev) << dev.status().to_string();
  std::vector<std::string> order;
  auto recording = [&](const std::string& name) {
    FakeOperator::Options o;
    o.name = name;
    o.target = *Target::parse("90a");
    o.estimate_us = 1;
    o.on_run = [&order, name] { order.push_back(name); };
    return OperatorPtr(FakeOperator::make(std::move(o)));
  };
  const auto tuned = autotune(dev->args, {recording("a"), recording("b")}, {.warmup = 1, .iterations = 2});
  ASSERT_EQ(tuned.size(), 2u);
  for (const Timing& t : tuned) EXPECT_TRUE(t.status) << t.op->name() << ": " << t.status.to_string();
  EXPECT_EQ(order, (std::vector<std::string>{"a", "b", "a", "b", "a", "b"}));
}

}  // namespace
}  // namespace gemmops::testing
