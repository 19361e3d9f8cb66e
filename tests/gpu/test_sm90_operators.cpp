// tests/gpu/test_sm90_operators.cpp: every registered sm90 operator against the float64 reference on
// random problems (empty groups, 1-row groups, tile +- 1, rows past offsets[G-1], both B majors).
// Instantiated from metadata on every machine; skipped with the reason where no sm_90a device is.
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gemmops/gemmops.hpp"
#include "support/compare.hpp"
#include "support/sm90_operators.hpp"
#include "support/sm90_split_k.hpp"
#include "support/device_problem.hpp"
#include "support/random_problems.hpp"
#include "support/reference.hpp"

namespace gemmops::testing {
namespace {

std::vector<ProblemSpec> every_problem_for(const OperatorMetadata& m);

/// Problems sized around the operator's tile so every edge appears: partial tiles in M and N,
/// groups of 0 and 1 rows, K not a multiple of 64, trailing rows no group covers; the K-grouped
/// form with group K ranges of every length (0, 1, a k-block +- 1) and both majors of A and B.
/// An out dtype other than A's (only the store differs) takes the ragged M-grouped, the dense and
/// the ragged K-grouped problem of one major each: the other majors and forms load and schedule as
/// its same-dtype twin does, which runs them all. (Every problem on all 128 operators took 2100 s
/// of the suite's 4600, most of it compiling kernels; the suite has to finish in one device call.)
std::vector<ProblemSpec> problems_for(const OperatorMetadata& m) {
  std::vector<ProblemSpec> all = every_problem_for(m);
  if (m.constraints.out_dtypes.at(0) == m.constraints.a_dtypes.at(0)) return all;
  std::vector<ProblemSpec> some;
  for (const ProblemSpec& s : all) {
    const bool ragged_m = s.kind == OperationKind::grouped_m && s.groups == 9 && s.b_major == Major::k;
    const bool dense = s.kind == OperationKind::gemm && s.a_major == Major::k && s.b_major == Major::k;
    const bool ragged_k = s.kind == OperationKind::grouped_k && s.groups == 11 && s.a_major == Major::mn &&
                          s.b_major == Major::mn;
    if (ragged_m || dense || ragged_k) some.push_back(s);
  }
  return some;
}

std::vector<ProblemSpec> every_problem_for(const OperatorMetadata& m) {
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
    // A M-major, dense (batched needs its batches stacked by rows, which a per-batch transpose is not).
    s.a_major = Major::mn;
    s.kind = OperationKind::gemm;
    s.m = 3 * tm + 8, s.n = tn + 8, s.k = 136, s.groups = 1, s.trailing = 0;
    specs.push_back(s);
    s.a_major = Major::k;
  }
  for (Major a_major : {Major::mn, Major::k}) {
    for (Major b_major : {Major::mn, Major::k}) {
      ProblemSpec s;
      s.a = s.b = ab;
      s.out = out;
      s.kind = OperationKind::grouped_k;
      s.a_major = a_major, s.b_major = b_major;
      // Extents are multiples of 8 (strides of 16 bytes); group ends fall anywhere.
      s.m = 2 * tm + 8, s.n = tn + 40, s.k = 1000, s.groups = 11, s.trailing = 37;  // ragged K ranges
      specs.push_back(s);
      s.m = tm - 8, s.n = 2 * tn - 8, s.k = 72, s.groups = 3, s.trailing = 0;  // about one k-block
      specs.push_back(s);
    }
  }
  return specs;
}

class Sm90OperatorTest : public ::testing::TestWithParam<OperatorPtr> {};
/// The scheduler, pipeline and split-K paths: once per design and output path (sm90_operators_per_path).
class Sm90OperatorPathTest : public Sm90OperatorTest {};

TEST_P(Sm90OperatorTest, matches_the_float64_reference_on_random_problems) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  const OperatorPtr& op = GetParam();
  std::mt19937 rng(1234);
  for (const ProblemSpec& spec : problems_for(op->metadata())) {
    if (!serves(*op, spec.kind)) continue;  // designs of 192 accumulators a thread: M-grouped forms only
    SCOPED_TRACE(spec.describe());
    HostProblem host = make_problem(spec, rng);
    auto dev = DeviceProblem::upload(host);
    ASSERT_TRUE(dev) << dev.status().to_string();
    Status s = op->supports(dev->args);
    ASSERT_TRUE(s) << s.to_string();
    auto artifact = op->compile(dev->args);
    ASSERT_TRUE(artifact) << artifact.status().to_string();
    s = dev->run(*op, *artifact);
    ASSERT_TRUE(s) << s.to_string();
    s = synchronize();
    ASSERT_TRUE(s) << s.to_string();
    auto out = dev->download_out(host.out);
    ASSERT_TRUE(out) << out.status().to_string();
    const Comparison c = compare(*out, reference_result(host.arguments()), default_tolerance(spec.out, spec.k));
    EXPECT_TRUE(c.ok()) << c.describe();
  }
}

TEST_P(Sm90OperatorPathTest, k_grouped_ignores_k_past_each_group_even_nan) {
  // A group's last k-block reads past its K range; those slices must not contribute, even when
  // they hold NaN (the K past offsets[G-1] here, which no group covers).
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  if (!serves(*GetParam(), OperationKind::grouped_k)) GTEST_SKIP() << "the design serves no K-grouped form";
  const OperatorPtr& op = GetParam();
  std::mt19937 rng(7);
  ProblemSpec spec;
  spec.a = spec.b = op->metadata().constraints.a_dtypes.at(0);
  spec.out = op->metadata().constraints.out_dtypes.at(0);
  spec.kind = OperationKind::grouped_k;
  spec.a_major = spec.b_major = Major::mn;
  spec.m = 104, spec.n = 136, spec.k = 304, spec.groups = 4, spec.trailing = 45;
  HostProblem host = make_problem(spec, rng);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int64_t kk = spec.k - spec.trailing; kk < spec.k; ++kk) {
    for (int64_t r = 0; r < spec.m; ++r) host.A.set(r * spec.k + kk, nan);
    for (int64_t c = 0; c < spec.n; ++c) host.B.set(kk * spec.n + c, nan);
  }
  auto dev = DeviceProblem::upload(host);
  ASSERT_TRUE(dev) << dev.status().to_string();
  Status s = dev->run(*op);
  ASSERT_TRUE(s) << s.to_string();
  ASSERT_TRUE(synchronize());
  auto got = dev->download_out(host.out);
  ASSERT_TRUE(got);
  const Comparison c = compare(*got, reference_result(host.arguments()), default_tolerance(spec.out, spec.k));
  EXPECT_TRUE(c.ok()) << c.describe();
}

// With the grid capped at one cluster, every CTA (and each ping-pong warpgroup) walks many tiles
// whose k-blocks outnumber the stages: the persistent loop, the ring's phases across tiles and the
// warpgroups' turns are all exercised, on ragged groups.
void check_many_tiles_on_one_cluster(const OperatorPtr& op, OperationKind kind) {
  struct MaxSms {
    MaxSms() { ::setenv("GEMMOPS_MAX_SMS", "2", 1); }
    ~MaxSms() { ::unsetenv("GEMMOPS_MAX_SMS"); }
  } cap;
  const OperatorMetadata& m = op->metadata();
  const int64_t tm = m.design.tile_m, tn = m.design.tile_n;
  std::mt19937 rng(4321);
  ProblemSpec spec;
  spec.a = spec.b = m.constraints.a_dtypes.at(0);
  spec.out = m.constraints.out_dtypes.at(0);
  spec.kind = kind;
  if (kind == OperationKind::grouped_m) {
    spec.m = 9 * tm + 24, spec.n = 2 * tn + 8, spec.k = 64 * (m.design.stages + 3) + 8, spec.groups = 5, spec.trailing = 3;
  } else {
    spec.a_major = spec.b_major = Major::mn;
    spec.m = 2 * tm + 8, spec.n = 2 * tn + 8, spec.k = 64 * 4 * (m.design.stages + 3), spec.groups = 3, spec.trailing = 8;
  }
  SCOPED_TRACE(spec.describe());
  HostProblem host = make_problem(spec, rng);
  auto dev = DeviceProblem::upload(host);
  ASSERT_TRUE(dev) << dev.status().to_string();
  Status s = dev->run(*op);
  ASSERT_TRUE(s) << s.to_string();
  s = synchronize();
  ASSERT_TRUE(s) << s.to_string();
  auto out = dev->download_out(host.out);
  ASSERT_TRUE(out) << out.status().to_string();
  const Comparison c = compare(*out, reference_result(host.arguments()), default_tolerance(spec.out, spec.k));
  EXPECT_TRUE(c.ok()) << c.describe();
}

TEST_P(Sm90OperatorPathTest, many_tiles_per_cta_with_k_longer_than_the_ring) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  check_many_tiles_on_one_cluster(GetParam(), OperationKind::grouped_m);
}

TEST_P(Sm90OperatorPathTest, many_k_grouped_tiles_per_cta_with_k_longer_than_the_ring) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  if (!serves(*GetParam(), OperationKind::grouped_k)) GTEST_SKIP() << "the design serves no K-grouped form";
  check_many_tiles_on_one_cluster(GetParam(), OperationKind::grouped_k);
}

// Tiles without k-blocks (K-grouped groups with no K) have no MMA to keep a warpgroup's warps in
// step, so on a long run of them the warps drift apart; the ping-pong turns must still hold (one
// arrival per warpgroup let a lagging warp's wait alias and hang, seen on a weight gradient whose
// last expert got no tokens). One cluster walks hundreds of such tiles, with a few real ones.
TEST_P(Sm90OperatorPathTest, long_runs_of_k_grouped_tiles_without_k_on_one_cluster) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  if (!serves(*GetParam(), OperationKind::grouped_k)) GTEST_SKIP() << "the design serves no K-grouped form";
  struct MaxSms {
    MaxSms() { ::setenv("GEMMOPS_MAX_SMS", "2", 1); }
    ~MaxSms() { ::unsetenv("GEMMOPS_MAX_SMS"); }
  } cap;
  const OperatorPtr& op = GetParam();
  const OperatorMetadata& m = op->metadata();
  std::mt19937 rng(99);
  ProblemSpec spec;
  spec.a = spec.b = m.constraints.a_dtypes.at(0);
  spec.out = m.constraints.out_dtypes.at(0);
  spec.kind = OperationKind::grouped_k;
  spec.a_major = spec.b_major = Major::mn;
  spec.m = 4 * m.design.tile_m, spec.n = 4 * m.design.tile_n, spec.groups = 24, spec.special_groups = false;
  for (int64_t k : {int64_t{0}, int64_t{40}}) {  // every group empty; then the first few k in one group
    spec.k = k + 8, spec.trailing = 8;
    SCOPED_TRACE(spec.describe());
    HostProblem host = make_problem(spec, rng);
    if (k > 0) {  // all of the K in group 5, none in the others
      for (int64_t g = 0; g < spec.groups; ++g) {
        host.ends[static_cast<size_t>(g)] = g < 5 ? 0 : static_cast<int32_t>(k);
        host.offsets.set(g, host.ends[static_cast<size_t>(g)]);
      }
    }
    auto dev = DeviceProblem::upload(host);
    ASSERT_TRUE(dev) << dev.status().to_string();
    Status s = dev->run(*op);
    ASSERT_TRUE(s) << s.to_string();
    s = synchronize();
    ASSERT_TRUE(s) << s.to_string();
    auto out = dev->download_out(host.out);
    ASSERT_TRUE(out) << out.status().to_string();
    const Comparison c = compare(*out, reference_result(host.arguments()), default_tolerance(spec.out, spec.k));
    EXPECT_TRUE(c.ok()) << c.describe();
  }
}

/// Sets the groups of `host` to `sizes` (rows, or K when K-grouped), runs `op` on it and compares
/// with the float64 reference (tolerance for a sum over `tolerance_k`). A problem with so many
/// groups that `op` refuses it (its table outgrew shared memory) is skipped when `may_refuse`.
void check_group_sizes(const OperatorPtr& op, HostProblem& host, const std::vector<int32_t>& sizes,
                       int64_t tolerance_k, bool may_refuse) {
  int32_t end = 0;
  for (size_t g = 0; g < sizes.size(); ++g) {
    end += sizes[g];
    host.ends[g] = end;
    host.offsets.set(static_cast<int64_t>(g), end);
  }
  auto dev = DeviceProblem::upload(host);
  ASSERT_TRUE(dev) << dev.status().to_string();
  Status s = dev->run(*op);
  if (may_refuse && s.code() == ErrorCode::unsupported) return;
  ASSERT_TRUE(s) << s.to_string();
  s = synchronize();
  ASSERT_TRUE(s) << s.to_string();
  auto out = dev->download_out(host.out);
  ASSERT_TRUE(out) << out.status().to_string();
  const Comparison cmp = compare(*out, reference_result(host.arguments()), default_tolerance(host.spec.out, tolerance_k));
  EXPECT_TRUE(cmp.ok()) << cmp.describe();
}

// K-grouped group lengths that end in every 16-wide k slice (the MMA reads only the slices inside
// a group's range and the part of the edge slices outside it is cleared), with ties and empty
// groups in the longest-first walk order, over rounds of units in both snake directions (the grid
// capped at 6 SMs; also in index order); and more groups than the scheduler orders.
TEST_P(Sm90OperatorPathTest, k_grouped_groups_ending_in_every_k_slice_in_any_walk_order) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  if (!serves(*GetParam(), OperationKind::grouped_k)) GTEST_SKIP() << "the design serves no K-grouped form";
  const OperatorPtr& op = GetParam();
  const OperatorMetadata& m = op->metadata();
  const std::vector<int32_t> lengths = {1, 15, 16, 17, 31, 32, 33, 47, 48, 49, 63, 64,
                                        65, 0,  100, 16, 129, 7, 0, 200, 79, 80, 81, 9};
  struct Case {
    std::vector<int32_t> lengths;
    const char* max_sms;  // nullptr: the whole device
    const char* walk;     // GEMMOPS_K_GROUPED_WALK; nullptr: the default
  };
  std::vector<int32_t> many(1030);  // past kMaxOrderedGroups (tile_scheduler.cuh)
  for (size_t g = 0; g < many.size(); ++g) many[g] = static_cast<int32_t>((g * 7) % 5);
  const std::vector<Case> cases = {
      {lengths, nullptr, nullptr}, {lengths, "6", nullptr}, {lengths, "6", "index"}, {many, nullptr, nullptr}};
  std::mt19937 rng(2024);
  for (const Case& c : cases) {
    for (Major a_major : {Major::mn, Major::k}) {
      struct Env {
        Env(const char* sms, const char* walk) {
          if (sms) ::setenv("GEMMOPS_MAX_SMS", sms, 1);
          if (walk) ::setenv("GEMMOPS_K_GROUPED_WALK", walk, 1);
        }
        ~Env() {
          ::unsetenv("GEMMOPS_MAX_SMS");
          ::unsetenv("GEMMOPS_K_GROUPED_WALK");
        }
      } env(c.max_sms, c.walk);
      ProblemSpec spec;
      spec.a = spec.b = m.constraints.a_dtypes.at(0);
      spec.out = m.constraints.out_dtypes.at(0);
      spec.kind = OperationKind::grouped_k;
      spec.a_major = a_major, spec.b_major = Major::mn;
      spec.groups = static_cast<int64_t>(c.lengths.size()), spec.special_groups = false;
      const bool many_groups = c.lengths.size() > 100;
      spec.m = many_groups ? 8 : m.design.tile_m + 8, spec.n = many_groups ? 64 : m.design.tile_n + 8;
      int64_t total = 0;
      for (int32_t len : c.lengths) total += len;
      spec.trailing = 8 + (8 - total % 8) % 8, spec.k = total + spec.trailing;  // TotalK: 16-byte rows of K-major A
      SCOPED_TRACE(spec.describe() + (c.max_sms ? " on 6 SMs" : "") + (c.walk ? " walk " + std::string(c.walk) : ""));
      HostProblem host = make_problem(spec, rng);
      check_group_sizes(op, host, c.lengths, 200, many_groups);
    }
  }
}

// M-grouped groups of very different sizes (empty, 1 row, tile +- 1, many tiles) on the whole
// device and on 6 SMs (many rounds of units, the group cursor moving through empty groups), and
// with 1024 and 1030 groups (the scheduler's table of many groups). Rows past the last group stay
// untouched.
TEST_P(Sm90OperatorPathTest, m_grouped_skewed_groups_on_any_grid) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  const OperatorPtr& op = GetParam();
  const OperatorMetadata& m = op->metadata();
  const int32_t tm = static_cast<int32_t>(m.design.tile_m * m.design.cluster_m);
  const std::vector<int32_t> sizes = {3 * tm + 5, 0, 1, tm, tm + 1, 17, 0, 5 * tm, 2, tm - 1, 64, 2 * tm, 1, 9 * tm + 3};
  struct Case {
    std::vector<int32_t> sizes;
    const char* max_sms;  // nullptr: the whole device
  };
  auto many = [](size_t groups) {
    std::vector<int32_t> v(groups);
    for (size_t g = 0; g < groups; ++g) v[g] = static_cast<int32_t>((g * 7) % 5 + (g % 97 == 0 ? 70 : 0));
    return v;
  };
  const std::vector<Case> cases = {{sizes, nullptr}, {sizes, "6"}, {many(1024), "6"}, {many(1030), nullptr}};
  std::mt19937 rng(77);
  for (const Case& c : cases) {
    struct Env {
      explicit Env(const char* sms) {
        if (sms) ::setenv("GEMMOPS_MAX_SMS", sms, 1);
      }
      ~Env() { ::unsetenv("GEMMOPS_MAX_SMS"); }
    } env(c.max_sms);
    ProblemSpec spec;
    spec.a = spec.b = m.constraints.a_dtypes.at(0);
    spec.out = m.constraints.out_dtypes.at(0);
    spec.kind = OperationKind::grouped_m;
    spec.groups = static_cast<int64_t>(c.sizes.size()), spec.special_groups = false;
    const bool many_groups = c.sizes.size() > 100;
    spec.n = many_groups ? 64 : m.design.tile_n + 8, spec.k = many_groups ? 72 : 64 * (m.design.stages + 1) + 8;
    int64_t total = 0;
    for (int32_t rows : c.sizes) total += rows;
    spec.trailing = 5, spec.m = total + spec.trailing;
    SCOPED_TRACE(spec.describe() + (c.max_sms ? " on 6 SMs" : ""));
    HostProblem host = make_problem(spec, rng);
    check_group_sizes(op, host, c.sizes, spec.k, many_groups);
  }
}

// Split-K forced on: the units of a tile sum disjoint k-blocks on different CTAs and the last one
// adds the others' partials. Ragged groups (empty, 1-row, past-the-end rows), K not a multiple of
// the split, more splits than some tiles have rows for; and on one cluster, where every unit of a
// tile runs on the same CTA in turn (a wait on a later unit would hang there).
struct ForcedSplitK {
  explicit ForcedSplitK(int splits, bool one_cluster = false) {
    ::setenv("GEMMOPS_SPLIT_K", std::to_string(splits).c_str(), 1);
    if (one_cluster) ::setenv("GEMMOPS_MAX_SMS", "2", 1);
  }
  ~ForcedSplitK() {
    ::unsetenv("GEMMOPS_SPLIT_K");
    ::unsetenv("GEMMOPS_MAX_SMS");
  }
};

void check_split_k(const OperatorPtr& op, int splits, bool one_cluster) {
  const OperatorMetadata& m = op->metadata();
  const int64_t tm = m.design.tile_m, tn = m.design.tile_n;
  std::vector<ProblemSpec> specs;
  ProblemSpec s;
  s.a = s.b = m.constraints.a_dtypes.at(0);
  s.out = m.constraints.out_dtypes.at(0);
  s.kind = OperationKind::grouped_m;
  s.m = 3 * tm + 17, s.n = 2 * tn + 8, s.k = 64 * 13 + 8, s.groups = 6, s.trailing = 3;
  specs.push_back(s);
  s.m = 40, s.n = tn + 64, s.k = 2048, s.groups = 37, s.trailing = 1;  // decode-like
  specs.push_back(s);
  s.b_major = Major::mn;
  s.kind = OperationKind::gemm;
  s.m = 2 * tm - 1, s.n = tn + 72, s.k = 64 * 9, s.groups = 1, s.trailing = 0;
  specs.push_back(s);
  ForcedSplitK forced(splits, one_cluster);
  std::mt19937 rng(splits * 31 + one_cluster);
  for (const ProblemSpec& spec : specs) {
    SCOPED_TRACE(spec.describe() + " split-K " + std::to_string(splits));
    HostProblem host = make_problem(spec, rng);
    auto dev = DeviceProblem::upload(host);
    ASSERT_TRUE(dev) << dev.status().to_string();
    EXPECT_GT(op->workspace_size(dev->args), 0u);
    Status st = dev->run(*op);
    ASSERT_TRUE(st) << st.to_string();
    st = synchronize();
    ASSERT_TRUE(st) << st.to_string();
    auto out = dev->download_out(host.out);
    ASSERT_TRUE(out) << out.status().to_string();
    const Comparison c = compare(*out, reference_result(host.arguments()), default_tolerance(spec.out, spec.k));
    EXPECT_TRUE(c.ok()) << c.describe();
  }
}

TEST_P(Sm90OperatorPathTest, split_k_matches_the_reference) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  GEMMOPS_SKIP_WITHOUT_SPLIT_K(GetParam()->metadata());
  check_split_k(GetParam(), 2, false);
  check_split_k(GetParam(), 3, false);
}

TEST_P(Sm90OperatorPathTest, split_k_on_one_cluster_runs_every_unit_of_a_tile_in_turn) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  GEMMOPS_SKIP_WITHOUT_SPLIT_K(GetParam()->metadata());
  check_split_k(GetParam(), 3, true);
}

TEST_P(Sm90OperatorPathTest, run_without_the_workspace_split_k_needs_is_refused) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  GEMMOPS_SKIP_WITHOUT_SPLIT_K(GetParam()->metadata());
  const OperatorPtr& op = GetParam();
  std::mt19937 rng(5);
  ProblemSpec spec = problems_for(op->metadata()).front();
  spec.k = 64 * 8;
  HostProblem host = make_problem(spec, rng);
  auto dev = DeviceProblem::upload(host);
  ASSERT_TRUE(dev);
  ForcedSplitK forced(2);
  const Status s = op->run(dev->args);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("workspace"), std::string::npos) << s.to_string();
}

TEST_P(Sm90OperatorPathTest, checker_rejects_a_result_shifted_by_one_row) {
  // Negative control: the comparison must fail when the kernel's rows are off by one.
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  const OperatorPtr& op = GetParam();
  std::mt19937 rng(99);
  ProblemSpec spec = problems_for(op->metadata()).front();
  spec.trailing = 0;
  HostProblem host = make_problem(spec, rng);
  auto dev = DeviceProblem::upload(host);
  ASSERT_TRUE(dev);
  ASSERT_TRUE(dev->run(*op));
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
INSTANTIATE_TEST_SUITE_P(Sm90, Sm90OperatorPathTest, ::testing::ValuesIn(sm90_operators_per_path()), operator_name);

}  // namespace
}  // namespace gemmops::testing
