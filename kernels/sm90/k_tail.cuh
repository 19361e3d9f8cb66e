// kernels/sm90/k_tail.cuh: zeroes k outside a group's range in one pipeline stage. In the
// K-grouped form a group's first and last k-blocks can reach into the neighbouring groups' K;
// TMA loads those slices (they are inside the tensor). The MMA skips the 16-wide k slices that lie
// wholly outside the range, so only the part of a slice it does read is cleared in shared memory
// before it reads the stage: both operands, so that an inf or NaN in a neighbouring group cannot
// leak in as 0 * inf.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

namespace gemmops::kernels::sm90 {

/// Clears k in [from, to) (0 <= from <= to <= 64) of a tile of `extent` M or N indices laid out
/// by TMA with the 128-byte swizzle. `thread` of `threads` cooperating threads.
template <bool kKMajor>
__device__ __forceinline__ void zero_k_range(::cuda::std::uint8_t* tile, int extent, int from, int to, int thread,
                                             int threads) {
  if (from >= to) return;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  if constexpr (!kKMajor) {
    // MN-major: atoms of 64 k-rows x 128 bytes (64 M or N indices); k is the row, so the swizzle
    // (a permutation of 16-byte chunks inside a row) does not matter: clear whole rows.
    const int per_atom = (to - from) * 8;
    for (int i = thread; i < (extent / 64) * per_atom; i += threads) {
      const int atom = i / per_atom, rest = i - atom * per_atom;
      const int row = from + rest / 8, chunk = rest % 8;
      *reinterpret_cast<uint4*>(tile + ((atom * 64 + row) * 8 + chunk) * 16) = zero;
    }
  } else {
    // K-major: `extent` rows of 64 k (128 bytes); 16-byte chunk c (k = 8c .. 8c + 7) of row r
    // sits at chunk c ^ (r % 8). Only the chunks that hold k in [from, to) are visited.
    const int c0 = from / 8, chunks = (to + 7) / 8 - c0;
    for (int i = thread; i < extent * chunks; i += threads) {
      const int r = i / chunks, c = c0 + (i - r * chunks), k0 = 8 * c;
      auto* chunk = reinterpret_cast<::cuda::std::uint16_t*>(tile + r * 128 + ((c ^ (r & 7)) * 16));
      if (k0 >= from && k0 + 8 <= to) {
        *reinterpret_cast<uint4*>(chunk) = zero;
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e)
          if (k0 + e >= from && k0 + e < to) chunk[e] = 0;
      }
    }
  }
}

}  // namespace gemmops::kernels::sm90
