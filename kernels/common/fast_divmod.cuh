// kernels/common/fast_divmod.cuh: division by a divisor fixed at run time, as a multiply-high and a
// shift. A 32-bit integer division is a ~20-instruction sequence on the GPU; the tile scheduler
// does several per tile, before the tile's main loop can start (bench/NOTES.md v13).
// SPDX-License-Identifier: Apache-2.0
#pragma once

// Host code includes this file too (the unit tests check it exhaustively over small ranges).
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define GEMMOPS_FD_HD __host__ __device__
#else
#define GEMMOPS_FD_HD
#endif

namespace gemmops::kernels::common {

/// Divides non-negative ints below 2^31 by `divisor` (>= 1): q = (umulhi(x, m) + x) >> s with
/// s = ceil(log2 d) and m = floor(2^32 (2^s - d) / d) + 1 (Granlund-Montgomery, "round-up"
/// multiplier with its 2^32 bit folded into the added x), exact for every x < 2^31.
struct FastDivisor {
  unsigned divisor = 1;
  unsigned multiplier = 1;
  unsigned shift = 0;

  FastDivisor() = default;
  GEMMOPS_FD_HD explicit FastDivisor(int d) : divisor(d > 0 ? unsigned(d) : 1u) {
    while ((1ull << shift) < divisor) ++shift;
    multiplier = unsigned(((1ull << 32) * ((1ull << shift) - divisor)) / divisor + 1);
  }

  GEMMOPS_FD_HD int quotient(int x) const {
#if defined(__CUDA_ARCH__)
    const unsigned hi = __umulhi(unsigned(x), multiplier);
#else
    const unsigned hi = unsigned((static_cast<unsigned long long>(unsigned(x)) * multiplier) >> 32);
#endif
    return int((hi + unsigned(x)) >> shift);
  }
};

/// x / d for 0 <= x < 2^22 and d >= 1 that change from call to call: a reciprocal and a multiply,
/// both rounded toward zero, land at most one below the quotient (relative error < 2^-22), and
/// one compare fixes that.
GEMMOPS_FD_HD inline int small_quotient(int x, int d) {
#if defined(__CUDA_ARCH__)
  int q = __float2int_rz(__fmul_rz(float(x), __frcp_rz(float(d))));
  if ((q + 1) * d <= x) ++q;
  return q;
#else
  return x / d;
#endif
}

}  // namespace gemmops::kernels::common

#undef GEMMOPS_FD_HD
