// tests/gpu/test_sm90_k_zero.cpp: K = 0 through the arguments API on every registered sm90 operator,
// with operands as torch gives them (null data, strides like (1, 1)): zeros in every group's rows
// (and in the tail with zero_tail), every K-grouped result zeros, a dense GEMM zeros
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <variant>

#include "gemmops/gemmops.hpp"
#include "support/device_check.hpp"
#include "support/sm90_operators.hpp"

namespace gemmops::testing {
namespace {

// An operand without elements has no memory in torch: a null pointer.
void drop_empty_operands(Arguments& args) {
  std::visit(
      [](auto& a) {
        if (a.A.numel() == 0) a.A.data = nullptr;
        if (a.B.numel() == 0) a.B.data = nullptr;
      },
      args);
}

class Sm90KZeroTest : public ::testing::TestWithParam<OperatorPtr> {};

TEST_P(Sm90KZeroTest, every_form_writes_zeros_from_operands_without_k) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  const OperatorPtr& op = GetParam();
  const OperatorMetadata& m = op->metadata();
  const int64_t unit = m.design.tile_m * m.design.cluster_m, tn = m.design.tile_n;
  std::vector<ProblemSpec> specs;
  ProblemSpec s;
  s.a = s.b = m.constraints.a_dtypes.at(0);
  s.out = m.constraints.out_dtypes.at(0);
  s.k = 0;
  // M-grouped: A (TotalM, 0) strides (1, 1); B (G, 0, N) strides (N, 1, 1) K-major or (N, N, 1).
  s.kind = OperationKind::grouped_m;
  s.m = 3 * unit + 21, s.n = tn + 8, s.groups = 6, s.trailing = unit + 3;
  for (Major b_major : {Major::k, Major::mn}) {
    for (bool zero_tail : {false, true}) {
      s.b_major = b_major, s.zero_tail = zero_tail;
      specs.push_back(s);
    }
  }
  s.zero_tail = false;
  // K-grouped with TotalK = 0: A (M, 0), B (0, N); every group empty, every result zeros.
  s.kind = OperationKind::grouped_k;
  s.m = unit + 8, s.n = 2 * tn - 8, s.groups = 5, s.trailing = 0, s.b_major = Major::mn;
  specs.push_back(s);
  // Dense and batched.
  s.kind = OperationKind::gemm;
  s.m = 2 * unit + 5, s.n = tn + 72, s.groups = 1;
  specs.push_back(s);
  s.kind = OperationKind::batched_gemm;
  s.m = unit / 2 + 3, s.n = 96, s.groups = 3;
  specs.push_back(s);
  std::mt19937 rng(41);
  for (const ProblemSpec& spec : specs) {
    if (!serves(*op, spec.kind)) continue;  // designs of 192 accumulators a thread: M-grouped forms only
    SCOPED_TRACE(spec.describe());
    const HostProblem host = make_problem(spec, rng);
    auto out = run_on_device(*op, host, drop_empty_operands);
    ASSERT_TRUE(out) << out.status().to_string();
    const Comparison c = compare(*out, reference_result(host.arguments()), default_tolerance(spec.out, 1));
    EXPECT_TRUE(c.ok()) << c.describe();
  }
}

std::string operator_name(const ::testing::TestParamInfo<OperatorPtr>& info) { return info.param->name(); }

INSTANTIATE_TEST_SUITE_P(Sm90, Sm90KZeroTest, ::testing::ValuesIn(sm90_operators_per_path()), operator_name);

}  // namespace
}  // namespace gemmops::testing
