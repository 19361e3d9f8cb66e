// tests/unit/test_signature_memo.cpp: signatures, and support/ranking answered once per signature
// with the per-call rule (out overlapping an input) still checked on every call
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/signature.hpp"
#include "gemmops/registry.hpp"
#include "support/fake_operator.hpp"
#include "support/scoped_env.hpp"
#include "support/problems.hpp"

namespace gemmops {
namespace {

using testing::FakeOperator;
using testing::make_grouped_m;

// Arguments of one layout whose operands live in `storage` at 256-byte-aligned places (A, B and out
// apart unless `out_on_a`).
GroupedGemmArguments placed(std::vector<std::byte>& storage, std::size_t base, bool out_on_a = false) {
  GroupedGemmArguments g = make_grouped_m(4, 64, 32, 16);
  auto* p = storage.data() + base;
  g.A.data = p;
  g.B.data = p + 4096;
  g.out.data = out_on_a ? p : p + 16384;
  g.offsets.data = nullptr;  // host offsets with data are checked value by value: none here
  return g;
}

std::vector<std::byte> aligned_storage() { return std::vector<std::byte>(1 << 20); }

std::size_t aligned_base(const std::vector<std::byte>& s) {
  const auto address = reinterpret_cast<uintptr_t>(s.data());
  return (256 - address % 256) % 256;
}

TEST(Signature, ignores_where_data_points_but_not_its_alignment_shape_or_strides) {
  std::vector<std::byte> s = aligned_storage();
  const std::size_t b = aligned_base(s);
  const auto x = detail::signature_of(placed(s, b));
  EXPECT_TRUE(x.valid);
  EXPECT_EQ(x, detail::signature_of(placed(s, b + 65536)));
  EXPECT_NE(x, detail::signature_of(placed(s, b + 8))) << "8-byte alignment differs from 256";
  GroupedGemmArguments wider = placed(s, b);
  wider.out.strides[0] += 8;
  EXPECT_NE(x, detail::signature_of(wider));
  GroupedGemmArguments tail = placed(s, b);
  tail.zero_tail = true;
  EXPECT_NE(x, detail::signature_of(tail));
  EXPECT_NE(detail::signature_of(placed(s, b), Target::cpu()), detail::signature_of(placed(s, b), Target::sm(90, true)));
}

TEST(SignatureMemo, supports_is_decided_once_per_signature) {
  FakeOperator::Options o;
  o.by_signature = true;
  auto op = FakeOperator::make(o);
  std::vector<std::byte> s = aligned_storage();
  const std::size_t b = aligned_base(s);
  EXPECT_TRUE(op->supports(placed(s, b)));
  EXPECT_TRUE(op->supports(placed(s, b + 65536)));
  EXPECT_EQ(op->extra_calls, 1);
}

TEST(SignatureMemo, an_operator_answering_by_data_is_asked_every_time) {
  auto op = FakeOperator::make({});
  std::vector<std::byte> s = aligned_storage();
  const std::size_t b = aligned_base(s);
  EXPECT_TRUE(op->supports(placed(s, b)));
  EXPECT_TRUE(op->supports(placed(s, b + 65536)));
  EXPECT_EQ(op->extra_calls, 2);
}

TEST(SignatureMemo, overlapping_memory_is_refused_on_every_call_after_an_accepted_layout) {
  FakeOperator::Options o;
  o.by_signature = true;
  auto op = FakeOperator::make(o);
  std::vector<std::byte> s = aligned_storage();
  const std::size_t b = aligned_base(s);
  ASSERT_TRUE(op->supports(placed(s, b)));
  const Status overlapping = op->supports(placed(s, b, true));
  EXPECT_EQ(overlapping.code(), ErrorCode::invalid_argument);
  EXPECT_NE(overlapping.message().find("out: must not overlap A"), std::string::npos) << overlapping.message();
  Registry r;
  ASSERT_TRUE(r.add(op));
  EXPECT_EQ(r.get_operators(placed(s, b), Target::cpu()).size(), 1u);
  EXPECT_TRUE(r.get_operators(placed(s, b, true), Target::cpu()).empty());
}

TEST(SignatureMemo, rules_come_in_the_same_order_with_and_without_the_memo) {
  for (bool by_signature : {false, true}) {
    FakeOperator::Options o;
    o.by_signature = by_signature;
    o.extra = unsupported("extra: refused");
    auto op = FakeOperator::make(o);
    std::vector<std::byte> s = aligned_storage();
    const std::size_t b = aligned_base(s);
    // Overlap is validate()'s rule: it comes before the operator's own refusal, warm or cold.
    for (int call = 0; call < 2; ++call) {
      EXPECT_EQ(op->supports(placed(s, b, true)).code(), ErrorCode::invalid_argument) << by_signature;
      EXPECT_EQ(op->supports(placed(s, b)).message(), "extra: refused") << by_signature;
    }
  }
}

TEST(RankingMemo, ranks_once_per_signature_and_starts_over_when_an_operator_is_added) {
  FakeOperator::Options slow, fast, by_data;
  slow.name = "slow", slow.estimate_us = 10, slow.by_signature = true;
  fast.name = "fast", fast.estimate_us = 1, fast.by_signature = true;
  by_data.name = "by_data", by_data.estimate_us = 5;
  auto s_op = FakeOperator::make(slow), f_op = FakeOperator::make(fast), d_op = FakeOperator::make(by_data);
  Registry r;
  ASSERT_TRUE(r.add(s_op));
  ASSERT_TRUE(r.add(d_op));
  std::vector<std::byte> s = aligned_storage();
  const std::size_t b = aligned_base(s);
  for (int call = 0; call < 3; ++call) {
    const auto ops = r.get_operators(placed(s, b + call * 65536), Target::cpu());
    ASSERT_EQ(ops.size(), 2u);
    EXPECT_EQ(ops[0]->name(), "by_data");
    EXPECT_EQ(ops[1]->name(), "slow");
  }
  EXPECT_EQ(s_op->extra_calls, 1);
  EXPECT_EQ(d_op->extra_calls, 3) << "an operator that reads data is asked on every call";
  ASSERT_TRUE(r.add(f_op));
  const auto ops = r.get_operators(placed(s, b), Target::cpu());
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0]->name(), "fast");
}

}  // namespace
}  // namespace gemmops

namespace gemmops {
namespace {

TEST(SignatureMemo, group_alignment_is_part_of_the_signature) {
  GroupedGemmArguments g = testing::moe_forward(12, 8192, 2048, 1024);
  // An operator answering by signature that serves contiguous groups only (every built-in GPU
  // operator serves aligned groups too).
  FakeOperator::Options o;
  o.by_signature = true;
  o.target = Target::sm(90, true);
  auto op = FakeOperator::make(o);
  ASSERT_FALSE(op->metadata().constraints.aligned_groups);
  EXPECT_TRUE(op->supports(g, Target::sm(90, true)));
  g.group_alignment = 128;
  EXPECT_NE(detail::signature_of(g), detail::signature_of(testing::moe_forward(12, 8192, 2048, 1024)));
  const Status s = op->supports(g, Target::sm(90, true));  // not the memoised answer of alignment 1
  EXPECT_EQ(s.code(), ErrorCode::unsupported) << s.to_string();
  EXPECT_EQ(s.message(), "group_alignment: this operator serves contiguous groups only (1); got 128");
  // The built-in operators' aligned layouts are served only on request until they pass the GPU suite.
  testing::ScopedEnv trial{{"GEMMOPS_TRIAL_DESIGNS", "1"}};
  const std::vector<OperatorPtr> aligned = get_operators(g, Target::sm(90, true));
  ASSERT_FALSE(aligned.empty());
  EXPECT_EQ(aligned.front()->metadata().provider, "sm90");
  for (const OperatorPtr& a : aligned) EXPECT_TRUE(a->metadata().constraints.aligned_groups) << a->name();
}

}  // namespace
}  // namespace gemmops
