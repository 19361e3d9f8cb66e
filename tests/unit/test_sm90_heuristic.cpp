// tests/unit/test_sm90_heuristic.cpp: get_operators() ranks first the design an H200 sweep measured
// fastest, on MoE shapes where that design won by a clear margin (>= 5% over every other kind)
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <string>

#include "gemmops/gemmops.hpp"

namespace gemmops {
namespace {

const Target kHopper = Target::sm(90, true);

/// Forward (M-grouped): A (TotalM,K), B (G,K,N) K-major, out (TotalM,N), bf16.
GroupedGemmArguments forward(int64_t G, int64_t total_m, int64_t n, int64_t k) {
  const Device cuda = Device::cuda(0);
  return GroupedGemmArguments{TensorDesc::contiguous(DType::bf16, {total_m, k}, cuda),
                              TensorDesc(DType::bf16, {G, k, n}, {n * k, 1, k}, cuda),
                              TensorDesc::contiguous(DType::bf16, {total_m, n}, cuda), DType::fp32,
                              TensorDesc::contiguous(DType::i32, {G}, cuda)};
}

/// Weight gradient (K-grouped): A = X^T (K_layer, TotalM) M-major, B = dOut (TotalM, N), out (G, K_layer, N).
GroupedGemmArguments weight_gradient(int64_t G, int64_t total_m, int64_t n, int64_t k_layer) {
  const Device cuda = Device::cuda(0);
  return GroupedGemmArguments{TensorDesc(DType::bf16, {k_layer, total_m}, {1, k_layer}, cuda),
                              TensorDesc::contiguous(DType::bf16, {total_m, n}, cuda),
                              TensorDesc::contiguous(DType::bf16, {G, k_layer, n}, cuda), DType::fp32,
                              TensorDesc::contiguous(DType::i32, {G}, cuda)};
}

Design first_design(const GroupedGemmArguments& args) {
  const auto ops = get_operators(args, kHopper);
  EXPECT_FALSE(ops.empty());
  return ops.empty() ? Design{} : ops.front()->metadata().design;
}

TEST(Sm90Heuristic, many_small_groups_take_64_row_ping_pong_tiles) {
  // Qwen3-Next prefill up, G=512 of 160 rows: 128-row tiles waste 37% of every group's second tile
  // (measured: 64x256 ping-pong 1.00, every other design >= 1.16).
  const Design d = first_design(forward(512, 81920, 1024, 2048));
  EXPECT_EQ(d.tile_m, 64) << d.to_string();
  EXPECT_EQ(d.schedule, Schedule::pingpong) << d.to_string();
}

TEST(Sm90Heuristic, decode_with_short_k_takes_ping_pong) {
  // DeepSeek-V3 decode TP8 down: G=256 of one row, K=256 (measured: 64x256 ping-pong 1.00, next 1.28).
  const Design d = first_design(forward(256, 256, 7168, 256));
  EXPECT_EQ(d.tile_m, 64) << d.to_string();
  EXPECT_EQ(d.schedule, Schedule::pingpong) << d.to_string();
}

TEST(Sm90Heuristic, very_short_k_with_many_tiles_takes_the_tma_epilogue) {
  // Qwen3-235B prefill TP4 down, K=384: the stores are the bottleneck (measured: TMA-store designs
  // 1.00-1.01, every direct-store design >= 1.22).
  const Design d = first_design(forward(128, 65536, 4096, 384));
  EXPECT_EQ(d.epilogue, Epilogue::tma_store) << d.to_string();
}

TEST(Sm90Heuristic, k_major_rows_off_a_32_byte_sector_take_a_2_cta_design) {
  // gpt-oss-120b prefill TP8 down, K=360: 720-byte rows of A and B. Measured in one run (uniform
  // tokens): every 1-CTA design 1.3-1.6x slower than at K=352 or 368, the 2-CTA ones 1.0-1.14x, so
  // 128x128 2-CTA TMA took 190 us where the pick before (128x128 ping-pong TMA) took 234.
  EXPECT_EQ(first_design(forward(128, 32768, 2880, 360)).cluster_m, 2);
  // Aligned neighbours keep a 1-CTA design: since v12, 128x256 4-stage TMA ring, within 0.5% of the
  // fastest design at K = 352, 368 and 384 (uniform and Zipf tokens).
  for (int64_t k : {352, 368, 384})
    EXPECT_EQ(first_design(forward(128, 32768, 2880, k)).cluster_m, 1) << "K=" << k;
}

TEST(Sm90Heuristic, one_token_decode_takes_the_small_m_design) {
  // Qwen3-30B decode B=1: 8 rows over 128 experts (measured: 64x128 small-M 1.00, next 1.03-1.17).
  const Design d = first_design(forward(128, 8, 1536, 2048));
  EXPECT_EQ(d.schedule, Schedule::small_m) << d.to_string();
}

TEST(Sm90Heuristic, weight_gradient_of_a_narrow_layer_takes_a_256_wide_tma_epilogue) {
  // DeepSeek-V3 decode-sized wgrad, 512 tokens over 32 experts into (7168, 4096) results: each
  // tile is mostly its store (measured, v12 sweep: the three 128x256 TMA-store designs 1.00-1.03,
  // 128x128 ping-pong TMA 1.06-1.20, direct-store designs slower still).
  const Design d = first_design(weight_gradient(32, 512, 4096, 7168));
  EXPECT_EQ(d.tile_n, 256) << d.to_string();
  EXPECT_EQ(d.epilogue, Epilogue::tma_store) << d.to_string();
}

TEST(Sm90Heuristic, a_decode_weight_gradient_with_odd_rows_takes_the_1_cta_4_stage_tma_design) {
  // gpt-oss-120b decode wgrad, 256 tokens over 128 experts into (2880, 5760) results: 2880 rows
  // leave the second CTA of a 256-row cluster unit idle on every group's last unit (measured, v12
  // sweep: 128x256 1-CTA 4-stage TMA 1.00, 2-CTA 3-stage TMA 1.03, 2-CTA 4-stage TMA 1.05-1.08,
  // 128x128 designs >= 1.10).
  EXPECT_EQ(first_design(weight_gradient(128, 256, 5760, 2880)).to_string(), "128x256x64_c1x1_s4_coop_tma_ring2");
}

TEST(Sm90Heuristic, a_prefill_weight_gradient_takes_a_256_row_2_cta_tma_design) {
  // DeepSeek-V3 EP8 prefill down wgrad, 65536 tokens over 32 experts into (2048, 7168) results:
  // measured (v12 sweep) 128x256 2-CTA 4-stage TMA 1.00, 1-CTA 1.004-1.006, 2-CTA 3-stage 1.01;
  // 64x256 ping-pong (the pick before the K-grouped time scales) 7-8% slower.
  const Design d = first_design(weight_gradient(32, 65536, 7168, 2048));
  EXPECT_EQ(d.tile_m * d.cluster_m, 256) << d.to_string();
  EXPECT_EQ(d.epilogue, Epilogue::tma_store) << d.to_string();
}

TEST(Sm90Heuristic, many_small_groups_with_short_k_take_a_design_that_skew_does_not_hurt) {
  // DeepSeek-V3 prefill TP8 down, 256 experts of 256 rows, K=256. Even tokens: 128x256 2-CTA TMA
  // 1.00, 128x128 ping-pong TMA 1.02; Zipf tokens: 128x128 ping-pong TMA 1.00, 128x256 2-CTA TMA
  // 1.27 (its 256-row units waste most of each small group). The sizes are on the device, so the
  // pick must be the one that is good under both: a TMA-epilogue design of 128-row units. (That
  // sweep had no _ring2 design for 256 groups, which it then refused; they now run them in two
  // launches and the estimate ranks the 1-CTA one first: not measured yet.)
  const Design d = first_design(forward(256, 65536, 7168, 256));
  EXPECT_EQ(d.tile_m * d.cluster_m, 128) << d.to_string();
  EXPECT_EQ(d.epilogue, Epilogue::tma_store) << d.to_string();
}

TEST(Sm90Heuristic, a_row_that_streams_weights_from_dram_avoids_64x256_ping_pong) {
  // gpt-oss-120b train down, 128 experts of 256 rows, K = N = 2880: every expert's 16 MB of B comes
  // from DRAM for 4 M tiles only. Measured (v12 sweep): 128x256 4-stage TMA 1.00 on uniform and
  // Zipf tokens, 128x128 ping-pong (6 stages) 1.03-1.08, 64x256 ping-pong (5 stages of 40 KB, the
  // pick before the load-latency bound) 1.06 and more.
  EXPECT_EQ(first_design(forward(128, 32768, 2880, 2880)).to_string(), "128x256x64_c1x1_s4_coop_tma_ring2");
}

}  // namespace
}  // namespace gemmops
