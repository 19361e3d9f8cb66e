// kernels/sm90/gather_a.cuh: the gathered A load (KernelConfig::gather_a): A's rows read through an
// index vector by the producer warpgroup's 128 threads with 16-byte cp.async copies, written in the
// 128-byte swizzle the wgmma descriptors expect (TMA has no row gather on Hopper)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

#include "ptx/cp_async.cuh"
#include "sm90/config.cuh"
#include "sm90/params.cuh"

namespace gemmops::kernels::sm90 {

/// One producer thread's share of a tile's A: 16-byte chunk `thread % 8` (k = 8c .. 8c + 7 of the
/// stage's 64) of tile rows thread / 8 + 16 i. Eight neighbouring threads read one row's 128
/// contiguous bytes. The rows' indices are read from global memory once per tile into registers.
template <KernelConfig C>
struct GatheredRows {
  static constexpr int kThreads = 128;
  static constexpr int kRowsPerPass = kThreads / 8;
  static constexpr int kRows = C.tile_m / kRowsPerPass;  // rows per thread (4, 8 or 16)
  static_assert(!C.gather_a || (C.tile_m % kRowsPerPass == 0 && C.k_row_bytes() == 128), "whole passes of 128-byte rows");

  int32_t row[kRows];  // A's row for each tile row, or -1 past the group's end (zero-filled, index unread)

  /// Rows [a_row0, a_row0 + tile_m) of the product; those at or past `row_end` are the next group's
  /// or past the last one (the index may end there): never read, their copies are zeros.
  __device__ __forceinline__ void load(const MainloopParams& m, int a_row0, int row_end, int thread) {
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const int r = a_row0 + thread / 8 + kRowsPerPass * i;
      row[i] = r < row_end ? __ldg(m.a_row_index + r) : -1;
    }
  }

  /// Issues this thread's copies of k in [k0, k0 + 64) into the stage at `a_dst`, then arrives on
  /// `bar` once they have landed (the barrier counts the 128 copying threads). Chunks past K (the K
  /// tail) are zero-filled, as TMA fills them. K is a multiple of 16 bytes (the plan refuses others):
  /// a chunk lies wholly inside K or wholly past it.
  __device__ __forceinline__ void copy(const MainloopParams& m, ::cuda::std::uint8_t* a_dst, int k0, int k, int thread,
                                       ::cuda::std::uint64_t* bar) const {
    constexpr int kElem = elem_bytes(C.ab);
    const int chunk = thread % 8, first_row = thread / 8;
    const int kc = k0 + 8 * chunk;
    const ::cuda::std::uint32_t chunk_bytes = kc < k ? 16u : 0u;
    // Chunk c of tile row r sits at chunk c ^ (r % 8) of its 128-byte row; r % 8 is the same for
    // all of this thread's rows (they step by 16).
    ::cuda::std::uint8_t* dst = a_dst + first_row * 128 + ((chunk ^ (first_row & 7)) * 16);
    const auto* base = static_cast<const ::cuda::std::uint8_t*>(m.a) + static_cast<int64_t>(kc) * kElem;
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const ::cuda::std::uint32_t bytes = row[i] >= 0 ? chunk_bytes : 0u;
      // A copy of no bytes reads nothing; it still gets a valid address.
      const void* src = bytes != 0 ? base + static_cast<int64_t>(row[i]) * m.a_row_stride * kElem : m.a;
      ptx::cp_async_16_zfill(dst + kRowsPerPass * i * 128, src, bytes);
    }
    ptx::cp_async_mbarrier_arrive_noinc(bar);
  }
};

}  // namespace gemmops::kernels::sm90
