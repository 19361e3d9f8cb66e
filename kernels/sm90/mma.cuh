// kernels/sm90/mma.cuh: one 64 x TILE_N x 16 warpgroup MMA step, chosen from the config at compile time
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "ptx/wgmma.cuh"
#include "sm90/config.cuh"

namespace gemmops::kernels::sm90 {

template <int kTileN, ElemType kAb, int kTransA, int kTransB>
__device__ __forceinline__ void mma_k16(float (&d)[kTileN / 2], ptx::uint64_t desc_a, ptx::uint64_t desc_b,
                                        int scale_d) {
  static_assert(kTileN == 64 || kTileN == 128 || kTileN == 192 || kTileN == 256,
                "tile_n must be 64, 128, 192 or 256");
  static_assert(kAb == ElemType::bf16 || kAb == ElemType::fp16, "wgmma path takes bf16 or fp16 inputs");
  if constexpr (kAb == ElemType::bf16) {
    if constexpr (kTileN == 64) ptx::wgmma_m64n64k16_f32_bf16<kTransA, kTransB>(d, desc_a, desc_b, scale_d);
    if constexpr (kTileN == 128) ptx::wgmma_m64n128k16_f32_bf16<kTransA, kTransB>(d, desc_a, desc_b, scale_d);
    if constexpr (kTileN == 192) ptx::wgmma_m64n192k16_f32_bf16<kTransA, kTransB>(d, desc_a, desc_b, scale_d);
    if constexpr (kTileN == 256) ptx::wgmma_m64n256k16_f32_bf16<kTransA, kTransB>(d, desc_a, desc_b, scale_d);
  } else {
    if constexpr (kTileN == 64) ptx::wgmma_m64n64k16_f32_fp16<kTransA, kTransB>(d, desc_a, desc_b, scale_d);
    if constexpr (kTileN == 128) ptx::wgmma_m64n128k16_f32_fp16<kTransA, kTransB>(d, desc_a, desc_b, scale_d);
    if constexpr (kTileN == 192) ptx::wgmma_m64n192k16_f32_fp16<kTransA, kTransB>(d, desc_a, desc_b, scale_d);
    if constexpr (kTileN == 256) ptx::wgmma_m64n256k16_f32_fp16<kTransA, kTransB>(d, desc_a, desc_b, scale_d);
  }
}

}  // namespace gemmops::kernels::sm90
