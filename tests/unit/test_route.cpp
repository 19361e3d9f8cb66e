// tests/unit/test_route.cpp: route() on the host gives the stable sort of the pairs by expert the
// contract states (rows, tokens, each pair's row, offsets, sorted scores; sentinels last), and
// validate()'s rules, each error naming the operand
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>

#include <string>

#include "gemmops/moe.hpp"
#include "moe/route_kernels.hpp"
#include "support/route_problem.hpp"
#include "support/scoped_env.hpp"

namespace gemmops::testing {
namespace {

/// What route() left in p against the stable sort, naming the first difference.
void expect_routed(const RouteProblem& p, const std::string& what) {
  const std::vector<int64_t> order = p.rows_order();
  for (size_t r = 0; r < order.size(); ++r) {
    const int64_t i = order[r];
    ASSERT_EQ(p.token.get(static_cast<int64_t>(r)), static_cast<double>(i / p.spec.k)) << what << ": token of row " << r;
    ASSERT_EQ(p.pair.get(i), static_cast<double>(r)) << what << ": row of pair " << i;
    if (p.spec.scores) {
      ASSERT_EQ(p.sorted_scores.get(static_cast<int64_t>(r)), p.scores.get(i)) << what << ": score of row " << r;
    }
  }
  int64_t end = 0;
  for (int e = 0; e < p.spec.experts; ++e) {
    for (int64_t i = 0; i < p.ids.numel(); ++i) end += p.bucket(i) == e ? 1 : 0;
    ASSERT_EQ(p.offsets.get(e), static_cast<double>(end)) << what << ": end of expert " << e;
  }
}

TEST(Route, sorts_the_pairs_by_expert_stably_on_the_host_sentinels_last) {
  uint32_t seed = 1;
  for (int experts : {1, 3, 128}) {
    for (int64_t k : {1, 2, 8}) {
      for (double sentinels : {0.0, 0.2}) {
        RouteSpec s{37, k, experts, sentinels, 0.3, (seed % 2) == 0, seed};
        ++seed;
        auto p = RouteProblem::make(s);
        ASSERT_TRUE(route(p.arguments()));
        expect_routed(p, "E=" + std::to_string(experts) + " k=" + std::to_string(k));
      }
    }
  }
}

TEST(Route, no_pairs_and_every_pair_a_sentinel) {
  auto none = RouteProblem::make(RouteSpec{0, 8, 16});
  ASSERT_TRUE(route(none.arguments()));
  for (int e = 0; e < 16; ++e) EXPECT_EQ(none.offsets.get(e), 0.0);
  auto all = RouteProblem::make(RouteSpec{10, 2, 4, 1.0});
  ASSERT_TRUE(route(all.arguments()));
  expect_routed(all, "all sentinels");
  EXPECT_EQ(all.offsets.get(3), 0.0);
}

TEST(Route, workspace_is_a_count_per_chunk_and_bucket_on_the_device) {
  EXPECT_EQ(route_workspace_size(0, 8), 0u);
  EXPECT_EQ(route_workspace_size(1, 8), 2u * 9u * 4u);  // the wide kernels' counts and starts, one chunk
  // The wide kernels' chunks of 256 pairs: 16 and 17 of them (the others' one and two chunks of 4096
  // need less).
  EXPECT_EQ(route_workspace_size(4096, 127), 2u * 16u * 128u * 4u);
  EXPECT_EQ(route_workspace_size(4097, 127), 2u * 17u * 128u * 4u);
  // Qwen3-30B-A3B at T = 65536 (524288 pairs, 128 experts): at most 2^18 / 129 = 2032 chunks, so
  // chunks of 288 pairs (259 rounded up to a warp's 32), 1821 of them: 1.8 MiB.
  EXPECT_EQ(route_workspace_size(524288, 128), 2u * 1821u * 129u * 4u);
  // 8192 experts: the wide chunks grow so that one block scans at most 2^18 counts.
  EXPECT_LE(route_workspace_size(65536, 8192), std::max<std::size_t>(2u * (1u << 18) * 4u, 16u * 8193u * 4u));
}

TEST(Route, the_device_takes_the_wide_kernels_up_to_131072_pairs_unless_told) {
  ScopedEnv unset{{"GEMMOPS_ROUTE_KERNELS", ""}};  // (empty: as unset)
  EXPECT_TRUE(moe::route_uses_wide_kernels(0));
  EXPECT_TRUE(moe::route_uses_wide_kernels(65536));  // Qwen3-30B-A3B, T = 8192, top-8
  EXPECT_TRUE(moe::route_uses_wide_kernels(131072));
  EXPECT_FALSE(moe::route_uses_wide_kernels(131073));
  EXPECT_FALSE(moe::route_uses_wide_kernels(262144));  // T = 32768: the wide scan is the slower there
  {
    ScopedEnv wide{{"GEMMOPS_ROUTE_KERNELS", "wide"}};
    EXPECT_TRUE(moe::route_uses_wide_kernels(262144));
  }
  {
    ScopedEnv chunked{{"GEMMOPS_ROUTE_KERNELS", "chunked"}};
    EXPECT_FALSE(moe::route_uses_wide_kernels(8));
  }
  ScopedEnv other{{"GEMMOPS_ROUTE_KERNELS", "fast"}};  // anything else: by the pairs
  EXPECT_TRUE(moe::route_uses_wide_kernels(8));
}

std::string refusal(const RouteArguments& a) {
  const Status s = validate(a);
  EXPECT_FALSE(s);
  return s.to_string();
}

TEST(Route, bad_arguments_are_refused_naming_the_operand_and_the_rule) {
  auto p = RouteProblem::make(RouteSpec{8, 2, 4});
  RouteArguments a = p.arguments();
  ASSERT_TRUE(validate(a));
  RouteArguments b = a;
  b.num_experts = 0;
  EXPECT_NE(refusal(b).find("num_experts: must be 1 .. 8192"), std::string::npos);
  b.num_experts = 8193;
  EXPECT_NE(refusal(b).find("num_experts"), std::string::npos);
  b = a;
  b.topk_ids.dtype = DType::fp32;
  EXPECT_NE(refusal(b).find("topk_ids: must be int32"), std::string::npos);
  b = a;
  b.offsets.shape = {5};
  EXPECT_NE(refusal(b).find("offsets: must be (E,) = (4)"), std::string::npos);
  b = a;
  b.token.shape = {15};
  EXPECT_NE(refusal(b).find("token: must be (T k,) = (16)"), std::string::npos);
  b = a;
  b.pair.shape = {2, 8};
  b.pair.strides = {8, 1};
  EXPECT_NE(refusal(b).find("pair: must be topk_ids' shape"), std::string::npos);
  b = a;
  b.sorted_scores.reset();
  EXPECT_NE(refusal(b).find("both or neither"), std::string::npos);
  b = a;
  b.token.data = p.pair.desc.data;  // two outputs in one place
  EXPECT_NE(refusal(b).find("token: must not overlap pair"), std::string::npos);
  b = a;
  b.pair.device = Device::cuda(0);
  EXPECT_NE(refusal(b).find("pair: must be on topk_ids' device"), std::string::npos);
}

}  // namespace
}  // namespace gemmops::testing
