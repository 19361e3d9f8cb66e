// kernels/moe/gather_reduce.cuh: the MoE layer's combine, out[t] = sum over token t's k choices, in
// choice order, of score[t, j] * rows[pair[t, j]], summed in fp32 (arch-neutral, sm_80 and later)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

#include "moe/gather_reduce_params.cuh"
#include "simt/elements.cuh"

namespace gemmops::kernels::moe {

using simt::Elem;

/// kVec elements from `p` (kVec * size bytes aligned when kVec > 1) into fp32.
template <Elem kElem, int kVec>
__device__ __forceinline__ void load_vector(const void* p, float (&v)[kVec]) {
  if constexpr (kVec == 1) {
    v[0] = simt::load_element<kElem>(p, 0);
  } else if constexpr (kElem == Elem::fp32) {
    static_assert(kVec == 4, "16-byte vectors");
    const float4 f = __ldg(static_cast<const float4*>(p));
    v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
  } else {
    static_assert(kVec == 8, "16-byte vectors");
    const uint4 u = __ldg(static_cast<const uint4*>(p));
    const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const unsigned short lo = static_cast<unsigned short>(w[i] & 0xffffu), hi = static_cast<unsigned short>(w[i] >> 16);
      v[2 * i] = simt::load_element<kElem>(&lo, 0);
      v[2 * i + 1] = simt::load_element<kElem>(&hi, 0);
    }
  }
}

/// kVec fp32 values to kVec elements at `p` (kVec * size bytes aligned), rounded to nearest even.
template <Elem kElem, int kVec>
__device__ __forceinline__ void store_vector(void* p, const float (&v)[kVec]) {
  if constexpr (kVec == 1) {
    simt::store_element<kElem>(p, 0, v[0]);
  } else if constexpr (kElem == Elem::fp32) {
#pragma unroll
    for (int i = 0; i < kVec; i += 4) static_cast<float4*>(p)[i / 4] = make_float4(v[i], v[i + 1], v[i + 2], v[i + 3]);
  } else {
    unsigned w[kVec / 2];
#pragma unroll
    for (int i = 0; i < kVec / 2; ++i) {
      unsigned short h[2];
      simt::store_element<kElem>(h, 0, v[2 * i]);
      simt::store_element<kElem>(h, 1, v[2 * i + 1]);
      w[i] = static_cast<unsigned>(h[0]) | (static_cast<unsigned>(h[1]) << 16);
    }
    if constexpr (kVec == 8) {
      *static_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
    } else {
      static_assert(kVec == 4, "8- or 16-byte vectors");
      *static_cast<uint2*>(p) = make_uint2(w[0], w[1]);
    }
  }
}

/// One block per token (grid-strided); each thread owns kVec contiguous columns and sums the
/// token's rows in choice order with one fma each: the bits depend on the inputs only, never on the
/// launch shape. Choices whose row is negative, past the rows or at/past *row_limit add nothing, so
/// a token without rows gets exact zeros.
template <Elem kIn, Elem kOut, int kVec, bool kScaled>
__global__ void __launch_bounds__(kThreads) gather_reduce_kernel(const GatherReduceParams p) {
  const int limit = p.row_limit != nullptr ? min(__ldg(p.row_limit), p.rows_count) : p.rows_count;
  for (int t = static_cast<int>(blockIdx.x); t < p.tokens; t += static_cast<int>(gridDim.x)) {
    const int* pair = p.pair + static_cast<int64_t>(t) * p.k;
    for (int c = static_cast<int>(threadIdx.x) * kVec; c < p.h; c += kThreads * kVec) {
      float acc[kVec] = {};
      for (int j = 0; j < p.k; ++j) {
        const int row = __ldg(pair + j);
        if (row < 0 || row >= limit) continue;
        float v[kVec];
        load_vector<kIn, kVec>(static_cast<const char*>(p.rows) +
                                   (static_cast<int64_t>(row) * p.row_stride + c) * (kIn == Elem::fp32 ? 4 : 2),
                               v);
        const float s = kScaled ? __ldg(p.scores + static_cast<int64_t>(t) * p.k + j) : 1.0f;
#pragma unroll
        for (int i = 0; i < kVec; ++i) acc[i] = kScaled ? fmaf(s, v[i], acc[i]) : acc[i] + v[i];
      }
      store_vector<kOut, kVec>(static_cast<char*>(p.out) +
                                   (static_cast<int64_t>(t) * p.out_stride + c) * (kOut == Elem::fp32 ? 4 : 2),
                               acc);
    }
  }
}

}  // namespace gemmops::kernels::moe
