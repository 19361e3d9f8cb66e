// tests/gpu/test_sm90_zero_tail.cpp: GroupedGemmArguments::zero_tail on every registered sm90 operator:
// out's rows past offsets[G-1] (poisoned before the run) become zeros in the same launch, and stay
// untouched without it; on every schedule (cooperative 1- and 2-CTA, ping-pong, small-M, TMA
// epilogue, _ring2), with split-K forced and on one cluster (many tiles without k-blocks in a row).
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "gemmops/gemmops.hpp"
#include "support/device_check.hpp"
#include "support/scoped_env.hpp"
#include "support/sm90_operators.hpp"
#include "support/sm90_split_k.hpp"

namespace gemmops::testing {
namespace {

ProblemSpec m_grouped(const OperatorMetadata& m) {
  ProblemSpec s;
  s.a = s.b = m.constraints.a_dtypes.at(0);
  s.out = m.constraints.out_dtypes.at(0);
  s.kind = OperationKind::grouped_m;
  return s;
}

/// Problems whose tails cover several scheduler units (whole 64-row slabs, which the TMA epilogue
/// stores by TMA, and a straddling one), a few rows inside the last group's tile, all of out (every
/// group empty, or no group at all), with B N-major too.
std::vector<ProblemSpec> tail_problems(const OperatorMetadata& m) {
  const int64_t unit = m.design.tile_m * m.design.cluster_m, tn = m.design.tile_n;
  std::vector<ProblemSpec> specs;
  ProblemSpec s = m_grouped(m);
  s.m = 5 * unit + 40, s.n = 2 * tn + 8, s.k = 200, s.groups = 7, s.trailing = 2 * unit + 13;
  specs.push_back(s);
  s.trailing = 3;
  specs.push_back(s);
  s.b_major = Major::mn;
  s.m = 3 * unit + 1, s.n = tn - 8, s.k = 72, s.groups = 4, s.trailing = unit + 64;
  specs.push_back(s);
  s.b_major = Major::k;
  s.m = 2 * unit + 7, s.n = tn + 64, s.k = 64, s.groups = 5, s.trailing = s.m;  // every group empty
  specs.push_back(s);
  s.groups = 0, s.m = unit + 9, s.trailing = s.m;  // no group: all of out is tail
  specs.push_back(s);
  return specs;
}

void check_tails(const OperatorPtr& op, const std::vector<ProblemSpec>& specs, std::mt19937& rng,
                 const std::string& how = "") {
  for (ProblemSpec spec : specs) {
    for (bool zero_tail : {false, true}) {
      spec.zero_tail = zero_tail;
      SCOPED_TRACE(spec.describe() + how);
      const HostProblem host = make_problem(spec, rng);
      expect_matches_reference(*op, host, spec.k);
    }
  }
}

class Sm90ZeroTailTest : public ::testing::TestWithParam<OperatorPtr> {};

TEST_P(Sm90ZeroTailTest, rows_past_the_last_group_become_zeros_and_stay_untouched_without_the_flag) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  std::mt19937 rng(31);
  check_tails(GetParam(), tail_problems(GetParam()->metadata()), rng);
}

TEST_P(Sm90ZeroTailTest, a_long_tail_on_one_cluster_keeps_the_pipeline_and_the_turns) {
  // One cluster walks the real tiles (k-blocks outnumbering the stages) and then tens of tail tiles
  // without any: the ring's phases carry over them and the ping-pong turns must not alias.
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  const OperatorMetadata& m = GetParam()->metadata();
  const int64_t unit = m.design.tile_m * m.design.cluster_m;
  ProblemSpec s = m_grouped(m);
  s.m = 4 * unit + 6 * unit + 5, s.n = 3 * m.design.tile_n, s.k = 64 * (m.design.stages + 3) + 8, s.groups = 3;
  s.trailing = 6 * unit + 5;
  std::mt19937 rng(32);
  ScopedEnv one_cluster{{"GEMMOPS_MAX_SMS", "2"}};
  check_tails(GetParam(), {s}, rng, " on one cluster");
}

TEST_P(Sm90ZeroTailTest, split_k_stores_the_tail_once_from_its_first_unit) {
  // A tail tile has no k-blocks: no partials to write or wait for. 3 ways (K of 14 k-blocks), on
  // the whole device and on one cluster, where every unit of a tile runs in turn on one CTA.
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  const OperatorMetadata& m = GetParam()->metadata();
  GEMMOPS_SKIP_WITHOUT_SPLIT_K(m);
  const int64_t unit = m.design.tile_m * m.design.cluster_m;
  ProblemSpec s = m_grouped(m);
  s.m = 3 * unit + 17 + 2 * unit + 7, s.n = 2 * m.design.tile_n + 8, s.k = 64 * 13 + 8, s.groups = 6;
  s.trailing = 2 * unit + 7;
  std::mt19937 rng(33);
  for (const char* sms : {static_cast<const char*>(nullptr), "2"}) {
    ScopedEnv forced{{"GEMMOPS_SPLIT_K", "3"}, {"GEMMOPS_MAX_SMS", sms}};
    s.zero_tail = true;
    const HostProblem host = make_problem(s, rng);
    auto dev = DeviceProblem::upload(host);
    ASSERT_TRUE(dev);
    EXPECT_GT(GetParam()->workspace_size(dev->args), 0u) << "split-K was not forced";
    check_tails(GetParam(), {s}, rng, sms ? " split-K 3 on one cluster" : " split-K 3");
  }
}

TEST_P(Sm90ZeroTailTest, checker_rejects_a_tail_left_unwritten) {
  // Negative control: the output of a run without zero_tail must fail the zero_tail reference.
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  std::mt19937 rng(34);
  ProblemSpec spec = tail_problems(GetParam()->metadata()).front();
  const HostProblem host = make_problem(spec, rng);
  auto out = run_on_device(*GetParam(), host);
  ASSERT_TRUE(out) << out.status().to_string();
  HostProblem with_tail = host;
  with_tail.spec.zero_tail = true;
  const Comparison c = compare(*out, reference_result(with_tail.arguments()), default_tolerance(spec.out, spec.k));
  EXPECT_FALSE(c.ok());
  EXPECT_GE(c.first_unwritten, (spec.m - spec.trailing) * spec.n) << c.describe();
}

std::string operator_name(const ::testing::TestParamInfo<OperatorPtr>& info) { return info.param->name(); }

INSTANTIATE_TEST_SUITE_P(Sm90, Sm90ZeroTailTest, ::testing::ValuesIn(sm90_operators_per_path()), operator_name);

}  // namespace
}  // namespace gemmops::testing
