// kernels/sm90/k_tail.cuh: zeroes the K tail of one pipeline stage. In the K-grouped form a group's
// last k-block runs past the group's K range into the next group's; TMA loads those slices (they
// are inside the tensor), so the consumers clear them in shared memory before the MMA reads the
// stage: both operands, so that an inf or NaN in a neighbouring group cannot leak in as 0 * inf.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

namespace gemmops::kernels::sm90 {

/// Clears k in [valid, 64) of a tile of `extent` M or N indices laid out by TMA with the 128-byte
/// swizzle. `thread` of `threads` cooperating threads.
template <bool kKMajor>
__device__ __forceinline__ void zero_k_tail(::cuda::std::uint8_t* tile, int extent, int valid, int thread,
                                            int threads) {
  const uint4 zero = make_uint4(0, 0, 0, 0);
  if constexpr (!kKMajor) {
    // MN-major: atoms of 64 k-rows x 128 bytes (64 M or N indices); rows [valid, 64) are whole
    // 128-byte rows, so the swizzle (a permutation inside a row) does not matter.
    const int chunks_per_atom = (64 - valid) * 8;
    for (int i = thread; i < (extent / 64) * chunks_per_atom; i += threads) {
      const int atom = i / chunks_per_atom, c = i - atom * chunks_per_atom;
      *reinterpret_cast<uint4*>(tile + atom * 64 * 128 + valid * 128 + c * 16) = zero;
    }
  } else {
    // K-major: `extent` rows of 64 k (128 bytes); 16-byte chunk c of row r sits at chunk c ^ (r % 8).
    const int first = valid / 8, partial = valid % 8, per_row = 8 - first;
    for (int i = thread; i < extent * per_row; i += threads) {
      const int r = i / per_row, c = first + (i - r * per_row);
      auto* chunk = reinterpret_cast<::cuda::std::uint16_t*>(tile + r * 128 + ((c ^ (r & 7)) * 16));
      if (c == first && partial != 0) {
        for (int e = partial; e < 8; ++e) chunk[e] = 0;  // keep the group's own k of this chunk
      } else {
        *reinterpret_cast<uint4*>(chunk) = zero;
      }
    }
  }
}

}  // namespace gemmops::kernels::sm90
