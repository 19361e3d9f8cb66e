// src/cpu/pack.hpp: strided operands of any dtype <-> the float panels the microkernel reads
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>

#include "gemmops/dtype.hpp"

namespace gemmops::cpu {

/// A strided matrix on the host; strides in elements, element (r, c) at data + r*row + c*col.
struct MatrixRef {
  const std::byte* data = nullptr;
  DType dtype = DType::fp32;
  int64_t row_stride = 0, col_stride = 0;
};

/// The writable counterpart, for out (bf16, fp16 or fp32).
struct OutRef {
  std::byte* data = nullptr;
  DType dtype = DType::fp32;
  int64_t row_stride = 0, col_stride = 0;
};

/// Rows [m0, m0+mc) x cols [k0, k0+kc) of A as ceil(mc/kMr) panels, dst[(p*kc + k)*kMr + i];
/// rows past mc are zero so the kernel can always run a full block.
void pack_a(const MatrixRef& a, int64_t m0, int64_t mc, int64_t k0, int64_t kc, float* dst);

/// Rows [k0, k0+kc) x cols [n0, n0+nc) of B as ceil(nc/kNr) panels, dst[(q*kc + k)*kNr + j].
void pack_b(const MatrixRef& b, int64_t k0, int64_t kc, int64_t n0, int64_t nc, float* dst);

/// Rounds c (mc x nc, leading dimension ldc) to out's dtype (nearest even) at (m0, n0).
void store_tile(const float* c, int64_t ldc, const OutRef& out, int64_t m0, int64_t mc, int64_t n0,
                int64_t nc);

}  // namespace gemmops::cpu
