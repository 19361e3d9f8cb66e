// kernels/simt/elements.cuh: one element of A, B or out to and from fp32, for every Elem
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

#include "simt/params.cuh"

namespace gemmops::kernels::simt {

using ::cuda::std::uint16_t;
using ::cuda::std::uint32_t;

/// Element `i` of `base` as fp32: exact for every Elem (bf16 is the top half of an fp32).
template <Elem kElem>
__device__ __forceinline__ float load_element(const void* base, int64_t i) {
  if constexpr (kElem == Elem::fp32) {
    return static_cast<const float*>(base)[i];
  } else if constexpr (kElem == Elem::bf16) {
    return __uint_as_float(uint32_t{static_cast<const uint16_t*>(base)[i]} << 16);
  } else {
    float f;
    asm("cvt.f32.f16 %0, %1;\n" : "=f"(f) : "h"(static_cast<const uint16_t*>(base)[i]));
    return f;
  }
}

/// Stores `v` at element `i` of `base`, rounded to nearest even (IEEE, as torch rounds).
template <Elem kElem>
__device__ __forceinline__ void store_element(void* base, int64_t i, float v) {
  if constexpr (kElem == Elem::fp32) {
    static_cast<float*>(base)[i] = v;
  } else {
    uint16_t h;
    if constexpr (kElem == Elem::bf16) {
      asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(h) : "f"(v));  // sm_80 and later
    } else {
      asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(h) : "f"(v));
    }
    static_cast<uint16_t*>(base)[i] = h;
  }
}

}  // namespace gemmops::kernels::simt
