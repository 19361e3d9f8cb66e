// tests/gpu/test_sm90_grouped_layouts.cpp: the layouts an expert-parallel dispatcher hands over, on every
// sm90 operator: aligned groups (padding rows between groups, never written) and the masked form
// (G groups of MaxM rows, the first `count` of each), against the float64 reference; skipped with the
// reason where no sm_90a device is
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "gemmops/gemmops.hpp"
#include "support/compare.hpp"
#include "support/device_check.hpp"
#include "support/device_problem.hpp"
#include "support/random_problems.hpp"
#include "support/reference.hpp"
#include "support/sm90_operators.hpp"

namespace gemmops::testing {
namespace {

class Sm90GroupedLayoutTest : public ::testing::TestWithParam<OperatorPtr> {};

void expect_matches(const Operator& op, const ProblemSpec& spec, std::mt19937& rng) {
  SCOPED_TRACE(spec.describe());
  HostProblem host = make_problem(spec, rng);
  auto dev = DeviceProblem::upload(host);
  ASSERT_TRUE(dev) << dev.status().to_string();
  Status s = op.supports(dev->args);
  ASSERT_TRUE(s) << s.to_string();
  auto artifact = op.compile(dev->args);
  ASSERT_TRUE(artifact) << artifact.status().to_string();
  s = dev->run(op, *artifact);
  ASSERT_TRUE(s) << s.to_string();
  ASSERT_TRUE(synchronize());
  auto out = dev->download_out(host.out);
  ASSERT_TRUE(out) << out.status().to_string();
  // The reference marks padding rows (aligned) and rows past each count (masked) as unwritten: they
  // must still hold the poison.
  const Comparison c = compare(*out, reference_result(host.arguments()), default_tolerance(spec.out, spec.k));
  EXPECT_TRUE(c.ok()) << c.describe();
}

ProblemSpec base_spec(const OperatorMetadata& m) {
  ProblemSpec s;
  s.a = s.b = m.constraints.a_dtypes.at(0);
  s.out = m.constraints.out_dtypes.at(0);
  return s;
}

TEST_P(Sm90GroupedLayoutTest, aligned_groups_compute_their_rows_and_leave_the_padding) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  const OperatorPtr& op = GetParam();
  std::mt19937 rng(31);
  const int64_t tm = op->metadata().design.tile_m, tn = op->metadata().design.tile_n;
  for (int32_t alignment : {8, 128}) {
    for (Major b_major : {Major::k, Major::mn}) {
      ProblemSpec s = base_spec(op->metadata());
      s.kind = OperationKind::grouped_m, s.group_alignment = alignment, s.b_major = b_major;
      s.m = 9 * tm + 40, s.n = tn + 8, s.k = 136, s.groups = 9, s.trailing = 7;
      expect_matches(*op, s, rng);
      s.zero_tail = true;  // the tail starts where the offsets end, past an empty last group too
      expect_matches(*op, s, rng);
      s.zero_tail = false;
      s.m = 300, s.groups = 40, s.k = 64;  // most groups tiny or empty, padding between nearly all
      expect_matches(*op, s, rng);
    }
  }
}

TEST_P(Sm90GroupedLayoutTest, masked_groups_compute_their_counted_rows_only) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  const OperatorPtr& op = GetParam();
  std::mt19937 rng(37);
  const int64_t tm = op->metadata().design.tile_m, tn = op->metadata().design.tile_n;
  for (Major b_major : {Major::k, Major::mn}) {
    ProblemSpec s = base_spec(op->metadata());
    s.kind = OperationKind::grouped_m_masked, s.b_major = b_major;
    s.m = 2 * tm + 8, s.n = tn + 8, s.k = 200, s.groups = 6;  // MaxM over two tiles: group 0 full, 1 empty
    expect_matches(*op, s, rng);
    s.m = 16, s.n = 2 * tn, s.k = 1024, s.groups = 64;  // decode: a few tokens an expert
    expect_matches(*op, s, rng);
  }
}

INSTANTIATE_TEST_SUITE_P(Sm90, Sm90GroupedLayoutTest, ::testing::ValuesIn(sm90_operators_per_path()),
                         [](const ::testing::TestParamInfo<OperatorPtr>& info) { return info.param->name(); });

}  // namespace
}  // namespace gemmops::testing
