// kernels/sm90/epilogue.cuh: the store of one consumer warpgroup's accumulators (64 x TILE_N) to out.
// Rows at or past the group's end row belong to the next group (or to nobody) and are never
// stored; columns past N neither. The epilogue is a replaceable part: a fused one (bias, SiLU,
// SwiGLU, scales) is another struct with the same store() signature.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

#include "ptx/warp.cuh"
#include "sm90/config.cuh"

namespace gemmops::kernels::sm90 {

template <ElemType kOut>
struct StoreEpilogue {
  // Accumulator fragment of wgmma m64nNk16 for thread t of the warpgroup: for each 8-column block j,
  // d[4j+0..1] are row (t/32)*16 + (t%32)/4, columns 8j + 2*(t%4) + {0,1}; d[4j+2..3] are 8 rows below.
  template <int kTileN>
  __device__ __forceinline__ static void store(const float (&d)[kTileN / 2], void* out, long long ld,
                                               int row0, int row_end, int col0, int n) {
    const int t = threadIdx.x % 128;
    const int r_lo = row0 + (t / 32) * 16 + (t % 32) / 4;
    const int c_base = col0 + 2 * (t % 4);
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int r = r_lo + 8 * half;
      if (r >= row_end) continue;
#pragma unroll
      for (int j = 0; j < kTileN / 8; ++j) {
        const int c = c_base + 8 * j;
        const float v0 = d[4 * j + 2 * half];
        const float v1 = d[4 * j + 2 * half + 1];
        if (c + 1 < n) {
          store_pair(out, r * ld + c, v0, v1);
        } else if (c < n) {
          store_one(out, r * ld + c, v0);
        }
      }
    }
  }

  __device__ __forceinline__ static void store_pair(void* out, long long idx, float v0, float v1) {
    if constexpr (kOut == ElemType::fp32) {
      float* p = static_cast<float*>(out) + idx;
      if ((idx & 1) == 0) {
        *reinterpret_cast<float2*>(p) = make_float2(v0, v1);
      } else {
        p[0] = v0;
        p[1] = v1;
      }
    } else {
      const ::cuda::std::uint32_t packed =
          kOut == ElemType::bf16 ? ptx::pack_bf16x2(v0, v1) : ptx::pack_f16x2(v0, v1);
      auto* p = static_cast<::cuda::std::uint16_t*>(out) + idx;
      if ((idx & 1) == 0) {
        *reinterpret_cast<::cuda::std::uint32_t*>(p) = packed;
      } else {
        p[0] = static_cast<::cuda::std::uint16_t>(packed & 0xFFFFu);
        p[1] = static_cast<::cuda::std::uint16_t>(packed >> 16);
      }
    }
  }

  __device__ __forceinline__ static void store_one(void* out, long long idx, float v) {
    if constexpr (kOut == ElemType::fp32) {
      static_cast<float*>(out)[idx] = v;
    } else {
      const ::cuda::std::uint32_t packed = kOut == ElemType::bf16 ? ptx::pack_bf16x2(v, 0.f) : ptx::pack_f16x2(v, 0.f);
      static_cast<::cuda::std::uint16_t*>(out)[idx] = static_cast<::cuda::std::uint16_t>(packed & 0xFFFFu);
    }
  }
};

}  // namespace gemmops::kernels::sm90
