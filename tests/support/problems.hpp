// tests/support/problems.hpp: valid arguments of each operation kind, to break one rule at a time
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>

#include "gemmops/arguments.hpp"

namespace gemmops::testing {

/// A (M,K) x B (K,N) -> out (M,N), row-major, fake, on `device`.
inline GemmArguments make_gemm(int64_t m, int64_t n, int64_t k, DType ab = DType::bf16, DType out = DType::bf16,
                               Device device = Device::cpu()) {
  GemmArguments g;
  g.A = TensorDesc::contiguous(ab, {m, k}, device);
  g.B = TensorDesc::contiguous(ab, {k, n}, device);
  g.out = TensorDesc::contiguous(out, {m, n}, device);
  return g;
}

/// A (L,M,K) x B (L,K,N) -> out (L,M,N).
inline GemmArguments make_batched(int64_t l, int64_t m, int64_t n, int64_t k, DType ab = DType::bf16,
                                  Device device = Device::cpu()) {
  GemmArguments g;
  g.A = TensorDesc::contiguous(ab, {l, m, k}, device);
  g.B = TensorDesc::contiguous(ab, {l, k, n}, device);
  g.out = TensorDesc::contiguous(ab, {l, m, n}, device);
  return g;
}

/// A (TotalM,K) x B (G,K,N) -> out (TotalM,N) with fake offsets (G,).
inline GroupedGemmArguments make_grouped_m(int64_t groups, int64_t total_m, int64_t n, int64_t k,
                                           DType ab = DType::bf16, Device device = Device::cpu()) {
  GroupedGemmArguments g;
  g.A = TensorDesc::contiguous(ab, {total_m, k}, device);
  g.B = TensorDesc::contiguous(ab, {groups, k, n}, device);
  g.out = TensorDesc::contiguous(DType::bf16, {total_m, n}, device);
  g.offsets = TensorDesc::contiguous(DType::i32, {groups}, device);
  return g;
}

/// A (M,TotalK) x B (TotalK,N) -> out (G,M,N) with fake offsets (G,).
inline GroupedGemmArguments make_grouped_k(int64_t groups, int64_t m, int64_t n, int64_t total_k,
                                           DType ab = DType::bf16, Device device = Device::cpu()) {
  GroupedGemmArguments g;
  g.A = TensorDesc::contiguous(ab, {m, total_k}, device);
  g.B = TensorDesc::contiguous(ab, {total_k, n}, device);
  g.out = TensorDesc::contiguous(DType::fp32, {groups, m, n}, device);
  g.offsets = TensorDesc::contiguous(DType::i32, {groups}, device);
  return g;
}

/// A (G,M,K) x B (K,TotalN) -> out (M,TotalN) with fake offsets (G,).
inline GroupedGemmArguments make_grouped_n(int64_t groups, int64_t m, int64_t total_n, int64_t k,
                                           DType ab = DType::bf16, Device device = Device::cpu()) {
  GroupedGemmArguments g;
  g.A = TensorDesc::contiguous(ab, {groups, m, k}, device);
  g.B = TensorDesc::contiguous(ab, {k, total_n}, device);
  g.out = TensorDesc::contiguous(DType::bf16, {m, total_n}, device);
  g.offsets = TensorDesc::contiguous(DType::i32, {groups}, device);
  return g;
}

/// The forward of an MoE layer's experts, fake, bf16 on cuda:0: A (TotalM,K) x B (G,K,N) with B the
/// K-major view of (G, N, K) weights, as models store them.
inline GroupedGemmArguments moe_forward(int64_t groups, int64_t total_m, int64_t n, int64_t k) {
  return GroupedGemmArguments{TensorDesc::contiguous(DType::bf16, {total_m, k}, Device::cuda(0)),
                              TensorDesc(DType::bf16, {groups, k, n}, {n * k, 1, k}, Device::cuda(0)),
                              TensorDesc::contiguous(DType::bf16, {total_m, n}, Device::cuda(0)), DType::fp32,
                              TensorDesc::contiguous(DType::i32, {groups}, Device::cuda(0))};
}

/// Its weight gradient, fake, bf16 on cuda:0: A = X^T (M, TotalK) M-major x dOut (TotalK, N) -> (G, M, N).
inline GroupedGemmArguments moe_weight_gradient(int64_t groups, int64_t total_k, int64_t m, int64_t n) {
  return GroupedGemmArguments{TensorDesc(DType::bf16, {m, total_k}, {1, m}, Device::cuda(0)),
                              TensorDesc::contiguous(DType::bf16, {total_k, n}, Device::cuda(0)),
                              TensorDesc::contiguous(DType::bf16, {groups, m, n}, Device::cuda(0)), DType::fp32,
                              TensorDesc::contiguous(DType::i32, {groups}, Device::cuda(0))};
}

/// M-grouped e4m3 A (TotalM, K) and B (G, K, N), both K-major, bf16 out, with K-major 1x128 (A) and
/// 128x128 (B) block scales: what the sm90 fp8 main loop serves. Fake, on cuda:0.
inline GroupedGemmArguments make_fp8_grouped(int64_t groups = 4, int64_t total_m = 256, int64_t k = 320,
                                             int64_t n = 256) {
  const Device cuda = Device::cuda(0);
  const int64_t kb = (k + 127) / 128, nb = (n + 127) / 128;
  GroupedGemmArguments g{TensorDesc::contiguous(DType::e4m3, {total_m, k}, cuda),
                         TensorDesc(DType::e4m3, {groups, k, n}, {n * k, 1, k}, cuda),
                         TensorDesc::contiguous(DType::bf16, {total_m, n}, cuda), DType::fp32,
                         TensorDesc::contiguous(DType::i32, {groups}, cuda)};
  g.a_scales = OperandScales{TensorDesc::contiguous(DType::fp32, {total_m, kb}, cuda), ScaleGranularity::block_1x128};
  g.b_scales = OperandScales{TensorDesc::contiguous(DType::fp32, {groups, nb, kb}, cuda),
                             ScaleGranularity::block_128x128};
  return g;
}

/// make_fp8_grouped with torch's rowwise scales instead of blocks: A's (TotalM,), B's (G, N).
inline GroupedGemmArguments make_fp8_grouped_rowwise(int64_t groups = 4, int64_t total_m = 256, int64_t k = 320,
                                                     int64_t n = 256) {
  GroupedGemmArguments g = make_fp8_grouped(groups, total_m, k, n);
  g.a_scales = OperandScales{TensorDesc::contiguous(DType::fp32, {total_m}, g.A.device), ScaleGranularity::row};
  g.b_scales = OperandScales{TensorDesc::contiguous(DType::fp32, {groups, n}, g.A.device), ScaleGranularity::row};
  return g;
}

/// The masked layout of make_fp8_grouped: A (G, MaxM, K) e4m3 with (G, MaxM, KB) 1x128 scales,
/// B (G, K, N) K-major with (G, NB, KB) 128x128 scales, out (G, MaxM, N) bf16, offsets (G,) row counts.
inline GroupedGemmArguments make_fp8_masked(int64_t groups = 4, int64_t max_m = 128, int64_t k = 320,
                                            int64_t n = 256) {
  const Device cuda = Device::cuda(0);
  const int64_t kb = (k + 127) / 128, nb = (n + 127) / 128;
  GroupedGemmArguments g{TensorDesc::contiguous(DType::e4m3, {groups, max_m, k}, cuda),
                         TensorDesc(DType::e4m3, {groups, k, n}, {n * k, 1, k}, cuda),
                         TensorDesc::contiguous(DType::bf16, {groups, max_m, n}, cuda), DType::fp32,
                         TensorDesc::contiguous(DType::i32, {groups}, cuda)};
  g.a_scales = OperandScales{TensorDesc::contiguous(DType::fp32, {groups, max_m, kb}, cuda),
                             ScaleGranularity::block_1x128};
  g.b_scales = OperandScales{TensorDesc::contiguous(DType::fp32, {groups, nb, kb}, cuda),
                             ScaleGranularity::block_128x128};
  return g;
}

}  // namespace gemmops::testing
