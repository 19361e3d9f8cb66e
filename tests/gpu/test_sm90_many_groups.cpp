// tests/gpu/test_sm90_many_groups.cpp: more groups than one launch's shared-memory scheduler table
// holds (launches over chunks of groups, src/sm90/group_chunks): 20000 skewed groups and a design's
// capacity + 1, M- and K-grouped, with zero_tail and with split-K, against the CPU operator
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "gemmops/gemmops.hpp"
#include "sm90/designs.hpp"
#include "sm90/group_chunks.hpp"
#include "sm90/grouped_gemm.hpp"
#include "support/device_check.hpp"
#include "support/scoped_env.hpp"
#include "support/sm90_operators.hpp"
#include "support/sm90_split_k.hpp"

namespace gemmops::testing {
namespace {

/// The scheduler-table entries one launch of `m`'s design holds (white-box: group_chunks.hpp).
int64_t table_capacity_of(const OperatorMetadata& m) {
  for (const sm90::Sm90Design& d : sm90::sm90_designs()) {
    if (!(d.design == m.design)) continue;
    const auto c = sm90::make_kernel_config(d, m.constraints.a_dtypes.at(0), m.constraints.out_dtypes.at(0), Major::k,
                                            Major::k, false);
    return sm90::table_capacity(c, sm90::kSm90SmemBudget);
  }
  ADD_FAILURE() << "no registered design " << m.design.to_string();
  return 1;
}

/// Skewed sizes: most groups of 0-4 rows (or K), every 97th 70 more, every 1999th 300 more.
std::vector<int32_t> skewed_sizes(int64_t groups) {
  std::vector<int32_t> v(static_cast<size_t>(groups));
  for (size_t g = 0; g < v.size(); ++g)
    v[g] = static_cast<int32_t>((g * 7) % 5 + (g % 97 == 0 ? 70 : 0) + (g % 1999 == 0 ? 300 : 0));
  return v;
}

/// A problem with these group sizes (rows, or K when K-grouped), integer operands (every sum exact
/// in fp32, so the CPU and GPU outputs round the same values), `trailing` rows or K past the last group.
HostProblem problem_with_sizes(const OperatorMetadata& m, OperationKind kind, const std::vector<int32_t>& sizes,
                               int64_t trailing, bool zero_tail, std::mt19937& rng, int64_t m_grouped_k = 72) {
  ProblemSpec s;
  s.a = s.b = m.constraints.a_dtypes.at(0);
  s.out = m.constraints.out_dtypes.at(0);
  s.kind = kind;
  s.groups = static_cast<int64_t>(sizes.size()), s.special_groups = false, s.zero_tail = zero_tail;
  int64_t total = 0;
  for (int32_t n : sizes) total += n;
  if (kind == OperationKind::grouped_m) {
    s.n = 64, s.k = m_grouped_k, s.trailing = trailing, s.m = total + trailing;
  } else {
    // The weight-gradient layout: A M-major, B N-major; K-major rows would need TotalK % 8 == 0.
    s.a_major = s.b_major = Major::mn;
    s.m = 8, s.n = 64, s.trailing = trailing, s.k = total + trailing;
  }
  HostProblem host = make_problem(s, rng);
  int32_t end = 0;
  for (size_t g = 0; g < sizes.size(); ++g) {
    end += sizes[g];
    host.ends[g] = end;
    host.offsets.set(static_cast<int64_t>(g), end);
  }
  fill_random_integers(host.A, rng, -4, 4);
  fill_random_integers(host.B, rng, -4, 4);
  return host;
}

/// What the CPU operator writes into a poisoned out: its values, and which elements it wrote.
Reference cpu_operator_result(const HostProblem& host) {
  HostProblem cpu = host;
  const OperatorPtr op = default_registry().find(std::string("cpu_") + std::string(name(host.spec.kind)));
  EXPECT_NE(op, nullptr);
  Reference r;
  if (op == nullptr) return r;
  const Status s = op->run(cpu.arguments());
  EXPECT_TRUE(s) << s.to_string();
  const auto n = static_cast<size_t>(cpu.out.numel());
  r.values.resize(n);
  r.written.resize(n);
  const auto size = static_cast<int64_t>(size_of(cpu.out.desc.dtype));
  for (size_t e = 0; e < n; ++e) {
    const std::byte* p = cpu.out.at(static_cast<int64_t>(e));
    bool poisoned = true;
    for (int64_t b = 0; b < size; ++b) poisoned = poisoned && p[b] == std::byte{0xff};
    r.written[e] = poisoned ? 0 : 1;
    r.values[e] = cpu.out.get(static_cast<int64_t>(e));
  }
  return r;
}

/// Runs `op` on `host` and compares its out with the CPU operator's and with the float64 reference.
void expect_matches_cpu_operator(const OperatorPtr& op, const HostProblem& host) {
  auto out = run_on_device(*op, host);
  ASSERT_TRUE(out) << out.status().to_string();
  const Tolerance tol = default_tolerance(host.spec.out, 512);
  const Comparison cpu = compare(*out, cpu_operator_result(host), tol);
  EXPECT_TRUE(cpu.ok()) << "against the CPU operator: " << cpu.describe();
  const Comparison exact = compare(*out, reference_result(host.arguments()), tol);
  EXPECT_TRUE(exact.ok()) << "against the float64 reference: " << exact.describe();
}

class Sm90ManyGroupsTest : public ::testing::TestWithParam<OperatorPtr> {};

TEST_P(Sm90ManyGroupsTest, twenty_thousand_skewed_groups_m_and_k_grouped) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  const OperatorPtr& op = GetParam();
  std::mt19937 rng(51);
  const std::vector<int32_t> sizes = skewed_sizes(20000);
  {
    SCOPED_TRACE("M-grouped, zero_tail");
    expect_matches_cpu_operator(op, problem_with_sizes(op->metadata(), OperationKind::grouped_m, sizes, 37, true, rng));
  }
  if (serves(*op, OperationKind::grouped_k)) {
    SCOPED_TRACE("K-grouped");
    expect_matches_cpu_operator(op, problem_with_sizes(op->metadata(), OperationKind::grouped_k, sizes, 16, false, rng));
  }
}

TEST_P(Sm90ManyGroupsTest, just_past_the_table_capacity_m_and_k_grouped) {
  // capacity + 1 groups: two launches. capacity groups with zero_tail: the tail's entry makes two.
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  const OperatorPtr& op = GetParam();
  const int64_t capacity = table_capacity_of(op->metadata());
  std::mt19937 rng(52);
  for (const auto& [groups, zero_tail] : {std::pair{capacity + 1, false}, std::pair{capacity, true}}) {
    const std::vector<int32_t> sizes = skewed_sizes(groups);
    SCOPED_TRACE("G " + std::to_string(groups) + (zero_tail ? " zero_tail" : ""));
    expect_matches_cpu_operator(op, problem_with_sizes(op->metadata(), OperationKind::grouped_m, sizes, 21, zero_tail, rng));
    if (!zero_tail && serves(*op, OperationKind::grouped_k))
      expect_matches_cpu_operator(op, problem_with_sizes(op->metadata(), OperationKind::grouped_k, sizes, 8, false, rng));
  }
}

TEST_P(Sm90ManyGroupsTest, split_k_across_launches_clears_its_flags_for_each) {
  // Every launch counts its tiles' partials from zero: a stale count would let a tile's last unit
  // add partials not yet written. On the whole device and on 6 SMs (many rounds of units).
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  const OperatorPtr& op = GetParam();
  GEMMOPS_SKIP_WITHOUT_SPLIT_K(op->metadata());
  const int64_t capacity = table_capacity_of(op->metadata());
  std::vector<int32_t> sizes(static_cast<size_t>(capacity + 5));
  for (size_t g = 0; g < sizes.size(); ++g) sizes[g] = static_cast<int32_t>(g % 3 == 0 ? 40 : g % 3);
  std::mt19937 rng(53);
  for (const char* sms : {static_cast<const char*>(nullptr), "6"}) {
    ScopedEnv forced{{"GEMMOPS_SPLIT_K", "2"}, {"GEMMOPS_MAX_SMS", sms}};
    SCOPED_TRACE(std::string("split-K 2") + (sms ? " on 6 SMs" : ""));
    // K of 9 k-blocks: split 2 ways (at least 4 k-blocks a unit).
    const HostProblem host = problem_with_sizes(op->metadata(), OperationKind::grouped_m, sizes, 9, true, rng, 64 * 8 + 8);
    auto dev = DeviceProblem::upload(host);
    ASSERT_TRUE(dev) << dev.status().to_string();
    EXPECT_GT(op->workspace_size(dev->args), 0u) << "split-K was not forced";
    expect_matches_cpu_operator(op, host);
  }
}

// One operator per design (bf16 in and out): the chunking is the host's and the scheduler's, the
// same for every type; the other types are covered by the operator tests on fewer groups.
std::vector<OperatorPtr> one_operator_per_design() {
  std::vector<OperatorPtr> ops;
  for (const OperatorPtr& op : sm90_operators())
    if (op->metadata().constraints.a_dtypes.at(0) == DType::bf16 && op->metadata().constraints.out_dtypes.at(0) == DType::bf16)
      ops.push_back(op);
  return ops;
}

std::string operator_name(const ::testing::TestParamInfo<OperatorPtr>& info) { return info.param->name(); }

INSTANTIATE_TEST_SUITE_P(Sm90, Sm90ManyGroupsTest, ::testing::ValuesIn(one_operator_per_design()), operator_name);

}  // namespace
}  // namespace gemmops::testing
