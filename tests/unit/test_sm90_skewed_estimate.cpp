// tests/unit/test_sm90_skewed_estimate.cpp: the estimate under skewed group sizes (heuristics.cpp)
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>

#include "gemmops/gemmops.hpp"
#include "sm90/designs.hpp"
#include "sm90/heuristics.hpp"
#include "sm90/kernel_problem.hpp"

namespace gemmops::sm90 {
namespace {

const Sm90Design& design_named(const std::string& name) {
  for (const Sm90Design& d : sm90_designs())
    if (d.design.to_string() == name) return d;
  ADD_FAILURE() << "no design " << name;
  return sm90_designs().front();
}

// The arguments must outlive the KernelProblem, which points into them: built in place, never copied.
struct Problem {
  explicit Problem(Arguments a) : args(std::move(a)) {
    auto mapped = map_problem(args);
    EXPECT_TRUE(mapped) << mapped.status().to_string();
    if (mapped) kp = *mapped;
  }
  Problem(const Problem&) = delete;
  Problem& operator=(const Problem&) = delete;
  Arguments args;
  KernelProblem kp;
};

Arguments forward(int64_t groups, int64_t total_m, int64_t n, int64_t k) {
  const Device cuda = Device::cuda(0);
  return GroupedGemmArguments{TensorDesc::contiguous(DType::bf16, {total_m, k}, cuda),
                              TensorDesc(DType::bf16, {groups, k, n}, {n * k, 1, k}, cuda),
                              TensorDesc::contiguous(DType::bf16, {total_m, n}, cuda), DType::fp32,
                              TensorDesc::contiguous(DType::i32, {groups}, cuda)};
}

Arguments dense(int64_t m, int64_t n, int64_t k) {
  const Device cuda = Device::cuda(0);
  return GemmArguments{TensorDesc::contiguous(DType::bf16, {m, k}, cuda),
                       TensorDesc::contiguous(DType::bf16, {k, n}, cuda),
                       TensorDesc::contiguous(DType::bf16, {m, n}, cuda), DType::fp32};
}

/// The weight gradient dW[g] = X[g]^T dY[g]: K-grouped over `tokens`, out (G, k_layer, n).
Arguments weight_gradient(int64_t groups, int64_t tokens, int64_t n, int64_t k_layer) {
  const Device cuda = Device::cuda(0);
  return GroupedGemmArguments{TensorDesc(DType::bf16, {k_layer, tokens}, {1, k_layer}, cuda),
                              TensorDesc::contiguous(DType::bf16, {tokens, n}, cuda),
                              TensorDesc::contiguous(DType::bf16, {groups, k_layer, n}, cuda), DType::fp32,
                              TensorDesc::contiguous(DType::i32, {groups}, cuda)};
}

TEST(Sm90SkewedEstimate, a_dense_gemm_has_no_groups_to_skew) {
  const Problem p(dense(4096, 4096, 4096));
  for (const Sm90Design& d : sm90_designs())
    EXPECT_DOUBLE_EQ(estimate_time_us(p.kp, d, kH200, 1, GroupSizes::even), estimate_time_us(p.kp, d, kH200, 1, GroupSizes::skewed))
        << d.design.to_string();
}

TEST(Sm90SkewedEstimate, skew_costs_256_row_cluster_units_more_than_64_row_tiles) {
  // 256 experts of 256 rows: even, every group fills whole units of either design; skewed, most
  // groups are small and a 2-CTA 128-row unit wastes most of each.
  const Problem p(forward(256, 65536, 7168, 256));
  const Sm90Design& big = design_named("128x256x64_c2x1_s3_coop_tma");
  const Sm90Design& small = design_named("64x256x64_c1x1_s5_pingpong");
  const double big_ratio =
      estimate_time_us(p.kp, big, kH200, 1, GroupSizes::skewed) / estimate_time_us(p.kp, big, kH200, 1, GroupSizes::even);
  const double small_ratio =
      estimate_time_us(p.kp, small, kH200, 1, GroupSizes::skewed) / estimate_time_us(p.kp, small, kH200, 1, GroupSizes::even);
  EXPECT_GT(big_ratio, small_ratio);
  EXPECT_GE(small_ratio, 1.0);
}

TEST(Sm90SkewedEstimate, the_ranking_estimate_lies_between_the_even_and_the_skewed_one) {
  const Problem p(forward(128, 32768, 2880, 2880));
  for (const Sm90Design& d : sm90_designs()) {
    const double even = estimate_time_us(p.kp, d, kH200, 1, GroupSizes::even);
    const double skewed = estimate_time_us(p.kp, d, kH200, 1, GroupSizes::skewed);
    const double ranked = estimate_time_us(p.kp, d, kH200, 1);
    EXPECT_GE(ranked, std::min(even, skewed) * (1 - 1e-12)) << d.design.to_string();
    EXPECT_LE(ranked, std::max(even, skewed) * (1 + 1e-12)) << d.design.to_string();
  }
}

TEST(Sm90SkewedEstimate, decode_with_fewer_rows_than_groups_touches_no_more_groups_when_skewed) {
  // 8 rows over 128 experts: at most 8 groups have rows; skewed, fewer still.
  const Problem p(forward(128, 8, 1536, 2048));
  for (const Sm90Design& d : sm90_designs()) {
    const double skewed = estimate_time_us(p.kp, d, kH200, 1, GroupSizes::skewed);
    EXPECT_GT(skewed, 0.0);
    EXPECT_LE(skewed, estimate_time_us(p.kp, d, kH200, 1, GroupSizes::even) * (1 + 1e-12)) << d.design.to_string();
  }
}

}  // namespace
}  // namespace gemmops::sm90

namespace gemmops::sm90 {
namespace {

TEST(Sm90SkewedEstimate, k_grouped_skew_is_priced_by_the_busiest_cluster_not_the_average_tile) {
  // 128 experts, 768 x 2048 results: a 256 x 256 cluster unit leaves 24 units per expert for 66
  // clusters, so the few long experts' units pile up on some clusters; 128 x 128 tiles (96 per
  // expert on 132 CTAs) spread them better. The average tile is the same under both sizes.
  const Problem p(weight_gradient(128, 65536, 2048, 768));
  const Sm90Design& big = design_named("128x256x64_c2x1_s3_coop_tma");
  const Sm90Design& small = design_named("128x128x64_c1x1_s4_pingpong_tma");
  const double big_ratio =
      estimate_time_us(p.kp, big, kH200, 1, GroupSizes::skewed) / estimate_time_us(p.kp, big, kH200, 1, GroupSizes::even);
  const double small_ratio =
      estimate_time_us(p.kp, small, kH200, 1, GroupSizes::skewed) / estimate_time_us(p.kp, small, kH200, 1, GroupSizes::even);
  EXPECT_GT(big_ratio, 1.15);
  EXPECT_GT(big_ratio, small_ratio + 0.05);
}

}  // namespace
}  // namespace gemmops::sm90
