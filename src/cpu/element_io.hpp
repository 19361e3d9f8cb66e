// src/cpu/element_io.hpp: one bf16, fp16 or fp32 element of a host buffer read as, or written from,
// an fp32 value (no alignment assumed; writes round to nearest even)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cpu/convert.hpp"
#include "gemmops/dtype.hpp"

namespace gemmops::cpu {

/// Element i of `base` (bf16, fp16, else fp32) as fp32: exact.
inline float load_float(const std::byte* base, DType dtype, int64_t i) {
  uint16_t h = 0;
  switch (dtype) {
    case DType::bf16: std::memcpy(&h, base + i * 2, 2); return bf16_to_float(h);
    case DType::fp16: std::memcpy(&h, base + i * 2, 2); return fp16_to_float(h);
    default: {
      float f;
      std::memcpy(&f, base + i * 4, 4);
      return f;
    }
  }
}

/// Writes `v` to element i of `base` (bf16, fp16, else fp32).
inline void store_float(std::byte* base, DType dtype, int64_t i, float v) {
  if (dtype == DType::bf16 || dtype == DType::fp16) {
    const uint16_t h = dtype == DType::bf16 ? float_to_bf16(v) : float_to_fp16(v);
    std::memcpy(base + i * 2, &h, 2);
  } else {
    std::memcpy(base + i * 4, &v, 4);
  }
}

}  // namespace gemmops::cpu
