// tests/gpu/test_sm90_gathered_k.cpp: the K-grouped form's operands gathered along K
// (GroupedGemmArguments::a_k_index, b_k_index) on every sm90 operator that serves them (with the
// trial opt-in), against the float64 reference: A, B or both gathered, random indices with
// repeats and every index the same; ragged groups with empty ones, group K not a multiple of 64,
// groups starting at k not a multiple of 8, k past the last offset, M and N not multiples of the
// tile; and the host-side refusal of an index outside the source. Also out stored M-major (each
// group's result transposed in memory: an nn.Linear-style weight's gradient), plain and with A
// gathered, on the TMA-store designs that serve it (a trial layout: the opt-in the suite sets)
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "gemmops/gemmops.hpp"
#include "support/device_check.hpp"
#include "support/scoped_env.hpp"
#include "support/sm90_operators.hpp"

namespace gemmops::testing {
namespace {

enum class Gathered { a, b, both, none };
enum class IndexKind { random_with_repeats, all_the_same };

/// One problem: A (M, TotalK) M-major or its gathered source's transpose (M, Rows), B (TotalK, N)
/// or its source (Rows, N), both with their M (N) values contiguous as the MoE's weight gradients
/// have them; out (G, M, N) poisoned; offsets over K; one index used for each gathered operand.
struct GatherKProblem {
  HostTensor A, B, out, offsets, index;
  Gathered gathered = Gathered::a;
  int64_t group_k = 0;  // the longest group's K, for the tolerance

  GroupedGemmArguments arguments() const {
    GroupedGemmArguments g{A.desc, B.desc, out.desc, DType::fp32, offsets.desc};
    if (gathers_a(gathered)) g.a_k_index = index.desc;
    if (gathers_b(gathered)) g.b_k_index = index.desc;
    return g;
  }
  static bool gathers_a(Gathered g) { return g == Gathered::a || g == Gathered::both; }
  static bool gathers_b(Gathered g) { return g == Gathered::b || g == Gathered::both; }
};

/// out (G, M, N): row-major, or M-major (the transposed view of a contiguous (G, N, M)).
HostTensor make_out(DType dtype, int64_t groups, int64_t M, int64_t N, bool m_major) {
  return m_major ? HostTensor::strided(dtype, {groups, M, N}, {N * M, 1, M})
                 : HostTensor::contiguous(dtype, {groups, M, N});
}

/// Groups of `ends` (non-decreasing; k past the last are never read: their index entries are -1).
GatherKProblem make_gather_k(const OperatorMetadata& m, Gathered gathered, int64_t rows, int64_t M, int64_t N,
                             int64_t total_k, const std::vector<int32_t>& ends, IndexKind kind, std::mt19937& rng,
                             bool out_m_major = false) {
  GatherKProblem p;
  p.gathered = gathered;
  const DType ab = m.constraints.a_dtypes.at(0);
  const int64_t a_cols = GatherKProblem::gathers_a(gathered) ? rows : total_k;
  const int64_t b_rows = GatherKProblem::gathers_b(gathered) ? rows : total_k;
  p.A = HostTensor::strided(ab, {M, a_cols}, {1, M});
  p.B = HostTensor::contiguous(ab, {b_rows, N});
  fill_random(p.A, rng);
  fill_random(p.B, rng);
  const auto groups = static_cast<int64_t>(ends.size());
  p.out = make_out(m.constraints.out_dtypes.at(0), groups, M, N, out_m_major);
  p.out.poison();
  p.offsets = HostTensor::contiguous(DType::i32, {groups});
  int32_t begin = 0;
  for (int64_t g = 0; g < groups; ++g) {
    p.offsets.set(g, ends[static_cast<size_t>(g)]);
    p.group_k = std::max<int64_t>(p.group_k, ends[static_cast<size_t>(g)] - begin);
    begin = ends[static_cast<size_t>(g)];
  }
  p.index = HostTensor::contiguous(DType::i32, {total_k});
  std::uniform_int_distribution<int32_t> any_row(0, static_cast<int32_t>(rows - 1));
  const int32_t same = any_row(rng);
  for (int64_t k = 0; k < total_k; ++k)
    p.index.set(k, k >= ends.back() ? -1 : kind == IndexKind::all_the_same ? same : any_row(rng));
  return p;
}

void expect_matches_reference(const Operator& op, const GatherKProblem& p) {
  auto A = upload(p.A), B = upload(p.B), out = upload(p.out), offsets = upload(p.offsets), index = upload(p.index);
  ASSERT_TRUE(A && B && out && offsets && index);
  GroupedGemmArguments g{on(p.A, *A), on(p.B, *B), on(p.out, *out), DType::fp32, on(p.offsets, *offsets)};
  if (GatherKProblem::gathers_a(p.gathered)) g.a_k_index = on(p.index, *index);
  if (GatherKProblem::gathers_b(p.gathered)) g.b_k_index = on(p.index, *index);
  const Status supported = op.supports(g);
  ASSERT_TRUE(supported) << supported.to_string();
  const Status ran = op.run(g);
  ASSERT_TRUE(ran) << ran.to_string();
  ASSERT_TRUE(synchronize());
  HostTensor result = p.out;
  ASSERT_TRUE(out->copy_to_host(result.storage.data(), result.storage.size()));
  const Tolerance tolerance = default_tolerance(p.out.desc.dtype, std::max<int64_t>(p.group_k, 1));
  const Comparison c = compare(result, reference_result(p.arguments()), tolerance);
  EXPECT_TRUE(c.ok()) << c.describe();
}

// The operators that serve `gathered` on a small fake problem (both operands MN-major; out M-major
// where asked).
std::vector<OperatorPtr> gathering_operators(Gathered gathered, bool out_m_major = false) {
  ScopedEnv trial{{"GEMMOPS_TRIAL_DESIGNS", "1"}};
  std::vector<OperatorPtr> ops;
  const Device cuda = Device::cuda(0);
  for (const OperatorPtr& op : sm90_operators_per_path()) {
    const DType ab = op->metadata().constraints.a_dtypes[0];
    TensorDesc a = TensorDesc::contiguous(ab, {64, 64}, cuda);
    a.strides = {1, 64};
    TensorDesc out = TensorDesc::contiguous(op->metadata().constraints.out_dtypes[0], {2, 64, 64}, cuda);
    if (out_m_major) out.strides = {64 * 64, 1, 64};
    GroupedGemmArguments g{a, TensorDesc::contiguous(ab, {64, 64}, cuda), out, DType::fp32,
                           TensorDesc::contiguous(DType::i32, {2}, cuda)};
    if (GatherKProblem::gathers_a(gathered)) g.a_k_index = TensorDesc::contiguous(DType::i32, {64}, cuda);
    if (GatherKProblem::gathers_b(gathered)) g.b_k_index = TensorDesc::contiguous(DType::i32, {64}, cuda);
    if (op->supports(g)) ops.push_back(op);
  }
  return ops;
}

struct GatherKCase {
  OperatorPtr op;
  Gathered gathered;
  bool out_m_major = false;
};

std::vector<GatherKCase> cases() {
  std::vector<GatherKCase> out;
  for (Gathered g : {Gathered::a, Gathered::b, Gathered::both})
    for (const OperatorPtr& op : gathering_operators(g)) out.push_back({op, g});
  for (Gathered g : {Gathered::none, Gathered::a})  // out M-major: plain, and the MoE's dW1
    for (const OperatorPtr& op : gathering_operators(g, true)) out.push_back({op, g, true});
  return out;
}

class Sm90GatheredKTest : public ::testing::TestWithParam<GatherKCase> {
 protected:
  ScopedEnv trial_{{"GEMMOPS_TRIAL_DESIGNS", "1"}};
};

TEST_P(Sm90GatheredKTest, matches_the_reference_for_random_and_constant_indices) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  const auto& [op, gathered, m_major] = GetParam();
  const OperatorMetadata& m = op->metadata();
  const int64_t unit = m.design.tile_m * m.design.cluster_m, tn = m.design.tile_n;
  std::mt19937 rng(51);
  for (IndexKind kind : {IndexKind::random_with_repeats, IndexKind::all_the_same}) {
    SCOPED_TRACE(kind == IndexKind::random_with_repeats ? "random indices" : "every index the same");
    // Six groups over 1000 of 1019 k, one empty, one of a single k; M and N past whole tiles.
    const std::vector<int32_t> ends = random_group_ends(rng, 6, 1000, true);
    expect_matches_reference(*op, make_gather_k(m, gathered, 77, unit + 40, tn + 72, 1019, ends, kind, rng, m_major));
  }
}

TEST_P(Sm90GatheredKTest, zero_fills_outside_groups_that_start_and_end_off_the_k_blocks) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  const auto& [op, gathered, m_major] = GetParam();
  const OperatorMetadata& m = op->metadata();
  std::mt19937 rng(52);
  // Groups starting at k 0, 13, 13 (empty), 90, 291, 300 and ending at 437 of 450: starts not
  // multiples of 8, K of 13, 77, 201, 9 and 137, none a multiple of 64.
  const std::vector<int32_t> ends = {13, 13, 90, 291, 300, 437};
  expect_matches_reference(*op, make_gather_k(m, gathered, 300, 2 * m.design.tile_m * m.design.cluster_m + 8,
                                              m.design.tile_n + 8, 450, ends, IndexKind::random_with_repeats, rng,
                                              m_major));
}

TEST_P(Sm90GatheredKTest, every_group_empty_writes_zeros) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  const auto& [op, gathered, m_major] = GetParam();
  std::mt19937 rng(53);
  expect_matches_reference(*op, make_gather_k(op->metadata(), gathered, 9, 64, 64, 128, {0, 0, 0},
                                              IndexKind::random_with_repeats, rng, m_major));
}

std::string case_name(const ::testing::TestParamInfo<GatherKCase>& info) {
  const Gathered g = info.param.gathered;
  const char* which = g == Gathered::a ? "a_" : g == Gathered::b ? "b_" : g == Gathered::both ? "ab_" : "none_";
  return (info.param.out_m_major ? std::string("mt_") : std::string()) + which + info.param.op->name();
}

INSTANTIATE_TEST_SUITE_P(Sm90, Sm90GatheredKTest, ::testing::ValuesIn(cases()), case_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Sm90GatheredKTest);

TEST(Sm90GatheredK, every_form_is_served_by_some_design) {
  for (Gathered g : {Gathered::a, Gathered::b, Gathered::both})
    EXPECT_FALSE(gathering_operators(g).empty()) << static_cast<int>(g);
  for (Gathered g : {Gathered::none, Gathered::a})
    EXPECT_FALSE(gathering_operators(g, true).empty()) << "out M-major, " << static_cast<int>(g);
}

TEST(Sm90GatheredK, an_index_outside_the_source_is_refused_on_the_host) {
  std::mt19937 rng(54);
  const OperatorPtr op = sm90_operators_per_path().front();
  GatherKProblem p = make_gather_k(op->metadata(), Gathered::b, 10, 64, 64, 64, {30, 64},
                                   IndexKind::random_with_repeats, rng);
  p.index.set(5, 10);
  const Status s = validate(p.arguments());
  EXPECT_EQ(s.code(), ErrorCode::invalid_argument) << s.to_string();
  EXPECT_NE(s.message().find("b_k_index: values must be rows of B, in [0, 10); got b_k_index[5] = 10"),
            std::string::npos) << s.message();
}

}  // namespace
}  // namespace gemmops::testing
