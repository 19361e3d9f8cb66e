// tests/gpu/test_sm90_operators.cpp: every registered sm90 operator against the float64 reference on
// random problems (empty groups, 1-row groups, tile +- 1, rows past offsets[G-1], both B majors).
// Instantiated from metadata on every machine; skipped with the reason where no sm_90a device is.
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "gemmops/gemmops.hpp"
#include "support/compare.hpp"
#include "support/sm90_operators.hpp"
#include "support/device_problem.hpp"
#include "support/random_problems.hpp"
#include "support/reference.hpp"

namespace gemmops::testing {
namespace {

/// Problems sized around the operator's tile so every edge appears: partial tiles in M and N,
/// groups of 0 and 1 rows, K not a multiple of 64, trailing rows no group covers.
std::vector<ProblemSpec> problems_for(const OperatorMetadata& m) {
  const DType ab = m.constraints.a_dtypes.at(0), out = m.constraints.out_dtypes.at(0);
  const int64_t tm = m.design.tile_m, tn = m.design.tile_n;
  std::vector<ProblemSpec> specs;
  for (Major b_major : {Major::k, Major::mn}) {
    ProblemSpec s;
    s.a = s.b = ab;
    s.out = out;
    s.b_major = b_major;
    s.kind = OperationKind::grouped_m;
    s.m = 7 * tm + 3, s.n = 2 * tn + 8, s.k = 200, s.groups = 9, s.trailing = 5;  // ragged everything
    specs.push_back(s);
    s.m = tm + 1, s.n = tn - 8, s.k = 64, s.groups = 3, s.trailing = 0;  // tile +- 1
    specs.push_back(s);
    s.m = 40, s.n = 64, s.k = 1024, s.groups = 37, s.trailing = 1;  // decode-like: most groups tiny or empty
    specs.push_back(s);
    s.kind = OperationKind::gemm;
    s.m = 3 * tm - 1, s.n = tn + 72, s.k = 136, s.groups = 1, s.trailing = 0;
    specs.push_back(s);
    s.kind = OperationKind::batched_gemm;
    s.m = tm / 2 + 5, s.n = 96, s.k = 72, s.groups = 5;
    specs.push_back(s);
  }
  return specs;
}

class Sm90OperatorTest : public ::testing::TestWithParam<OperatorPtr> {};

TEST_P(Sm90OperatorTest, matches_the_float64_reference_on_random_problems) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  const OperatorPtr& op = GetParam();
  std::mt19937 rng(1234);
  for (const ProblemSpec& spec : problems_for(op->metadata())) {
    SCOPED_TRACE(spec.describe());
    HostProblem host = make_problem(spec, rng);
    auto dev = DeviceProblem::upload(host);
    ASSERT_TRUE(dev) << dev.status().to_string();
    Status s = op->supports(dev->args);
    ASSERT_TRUE(s) << s.to_string();
    auto artifact = op->compile(dev->args);
    ASSERT_TRUE(artifact) << artifact.status().to_string();
    s = op->run(dev->args, *artifact);
    ASSERT_TRUE(s) << s.to_string();
    s = synchronize();
    ASSERT_TRUE(s) << s.to_string();
    auto out = dev->download_out(host.out);
    ASSERT_TRUE(out) << out.status().to_string();
    const Comparison c = compare(*out, reference_result(host.arguments()), default_tolerance(spec.out, spec.k));
    EXPECT_TRUE(c.ok()) << c.describe();
  }
}

TEST_P(Sm90OperatorTest, checker_rejects_a_result_shifted_by_one_row) {
  // Negative control: the comparison must fail when the kernel's rows are off by one.
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  const OperatorPtr& op = GetParam();
  std::mt19937 rng(99);
  ProblemSpec spec = problems_for(op->metadata()).front();
  spec.trailing = 0;
  HostProblem host = make_problem(spec, rng);
  auto dev = DeviceProblem::upload(host);
  ASSERT_TRUE(dev);
  ASSERT_TRUE(op->run(dev->args));
  ASSERT_TRUE(synchronize());
  auto out = dev->download_out(host.out);
  ASSERT_TRUE(out);
  HostTensor shifted = *out;
  const int64_t n = spec.n;
  for (int64_t r = spec.m - 1; r > 0; --r)
    for (int64_t c = 0; c < n; ++c) shifted.set(r * n + c, out->get((r - 1) * n + c));
  EXPECT_FALSE(compare(shifted, reference_result(host.arguments()), default_tolerance(spec.out, spec.k)).ok());
}

std::string operator_name(const ::testing::TestParamInfo<OperatorPtr>& info) { return info.param->name(); }

INSTANTIATE_TEST_SUITE_P(Sm90, Sm90OperatorTest, ::testing::ValuesIn(sm90_operators()), operator_name);

}  // namespace
}  // namespace gemmops::testing
