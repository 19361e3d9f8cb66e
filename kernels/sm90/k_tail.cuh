// kernels/sm90/k_tail.cuh: zeroes the k outside a group's range in one pipeline stage. In the
// K-grouped form a group's first and last k-blocks can reach into the neighbouring groups' K;
// TMA loads those slices (they are inside the tensor), so the consumers clear them in shared
// memory before the MMA reads the stage: both operands, so that an inf or NaN in a neighbouring
// group cannot leak in as 0 * inf.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

namespace gemmops::kernels::sm90 {

/// Clears k outside [lo, hi) (0 <= lo < hi <= 64) of a tile of `extent` M or N indices laid out
/// by TMA with the 128-byte swizzle. `thread` of `threads` cooperating threads.
template <bool kKMajor>
__device__ __forceinline__ void zero_k_outside(::cuda::std::uint8_t* tile, int extent, int lo, int hi, int thread,
                                               int threads) {
  const uint4 zero = make_uint4(0, 0, 0, 0);
  if constexpr (!kKMajor) {
    // MN-major: atoms of 64 k-rows x 128 bytes (64 M or N indices); k is the row, so the swizzle
    // (a permutation of 16-byte chunks inside a row) does not matter.
    for (int i = thread; i < extent * 8; i += threads) {
      const int row = (i / 8) % 64;  // i = (atom * 64 + row) * 8 + chunk
      if (row < lo || row >= hi) *reinterpret_cast<uint4*>(tile + i * 16) = zero;
    }
  } else {
    // K-major: `extent` rows of 64 k (128 bytes); 16-byte chunk c (k = 8c .. 8c + 7) of row r
    // sits at chunk c ^ (r % 8).
    for (int i = thread; i < extent * 8; i += threads) {
      const int r = i / 8, c = i % 8, k0 = 8 * c;
      if (k0 >= lo && k0 + 8 <= hi) continue;  // all inside: keep
      auto* chunk = reinterpret_cast<::cuda::std::uint16_t*>(tile + r * 128 + ((c ^ (r & 7)) * 16));
      if (k0 + 8 <= lo || k0 >= hi) {
        *reinterpret_cast<uint4*>(chunk) = zero;
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e)
          if (k0 + e < lo || k0 + e >= hi) chunk[e] = 0;
      }
    }
  }
}

}  // namespace gemmops::kernels::sm90
