// kernels/sm90/gather_k.cuh: the K-grouped form's operands gathered along K (KernelConfig::gather_a
// with an M-major A, gather_b with an N-major B): each k-row of a stage is one source row's 64
// contiguous M (or N) values, read through an index by the producer warpgroup's 128 threads with
// 16-byte cp.async copies into the MN-major 128-byte swizzle the wgmma descriptors expect
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

#include "ptx/cp_async.cuh"
#include "sm90/config.cuh"

namespace gemmops::kernels::sm90 {

/// One producer thread's share of a stage's gathered operand: 16-byte chunk `thread % 8` (MN
/// indices 8c .. 8c + 7 of every 64-wide atom) of the stage's k-rows thread / 8 + 16 i, i < 4.
/// Eight neighbouring threads read one source row's 128 contiguous bytes of an atom. The k-rows'
/// source rows are read from global memory per k-block, a k-block ahead (GatheredKOperands).
template <KernelConfig C, int kExtent>
struct GatheredKRows {
  static constexpr int kThreads = 128;
  static constexpr int kRowsPerPass = kThreads / 8;
  static constexpr int kRows = 64 / kRowsPerPass;  // k-rows per thread (4)
  static constexpr int kAtoms = kExtent / 64;      // 64-wide M (N) atoms of the tile
  static_assert(C.tile_k == 64 && elem_bytes(C.ab) == 2, "MN-major atoms of 64 k-rows x 64 16-bit values");
  static_assert(kExtent % 64 == 0, "whole atoms");

  int32_t row[kRows];  // the source row of each of this thread's k-rows, or -1 outside the group

  /// k in [k0, k0 + 64) of the stage; those outside the group's [k_first, k_end) belong to the
  /// neighbouring groups or lie past TotalK (the index may end there): never read, their copies are
  /// zeros, so the consumers' clearing of the slices' edges finds zeros already.
  __device__ __forceinline__ void load(const int32_t* __restrict__ index, int k0, int k_first, int k_end, int thread) {
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const int k = k0 + thread / 8 + kRowsPerPass * i;
      row[i] = k >= k_first && k < k_end ? __ldg(index + k) : -1;
    }
  }

  /// Issues this thread's copies of MN indices [mn0, mn0 + kExtent) into the stage at `dst`; those
  /// at or past `mn_end` (the tile past M or N; the host keeps M and N multiples of 8, so a chunk
  /// is wholly inside or outside) are zero-filled. The caller arrives on the full barrier after.
  __device__ __forceinline__ void copy(const void* src, int64_t row_stride, int mn0, int mn_end,
                                       ::cuda::std::uint8_t* dst, int thread) const {
    const int chunk = thread % 8, first_row = thread / 8;
    // Atom j holds 64 k-rows of 128 bytes; chunk c of k-row r sits at chunk c ^ (r % 8) of it, and
    // r % 8 is the same for all of this thread's k-rows (they step by 16).
    ::cuda::std::uint8_t* d = dst + first_row * 128 + ((chunk ^ (first_row & 7)) * 16);
    const auto* base = static_cast<const ::cuda::std::uint8_t*>(src);
#pragma unroll
    for (int j = 0; j < kAtoms; ++j) {
      const int mn = mn0 + 64 * j + 8 * chunk;
#pragma unroll
      for (int i = 0; i < kRows; ++i) {
        const ::cuda::std::uint32_t bytes = row[i] >= 0 && mn < mn_end ? 16u : 0u;
        // A copy of no bytes reads nothing; it still gets a valid address.
        const void* s = bytes != 0 ? base + (static_cast<int64_t>(row[i]) * row_stride + mn) * 2 : src;
        ptx::cp_async_16_zfill(d + (j * 64 + kRowsPerPass * i) * 128, s, bytes);
      }
    }
  }
};

/// The gathered operands' k-rows of one k-block (A's, B's or both; an operand not gathered holds
/// nothing the compiler keeps). The producer reads the next k-block's while it waits for a slot and
/// issues this one's copies: read just before their own copies, every k-block's indices cost the
/// producer an L2 round trip on its critical path.
/// Rows, or nothing for an operand not gathered: GatheredKRows is then never instantiated (NVRTC would
/// emit its static members into every kernel's PTX; so would cuda/std/type_traits' conditional_t).
template <bool kGathered, typename Rows>
struct KRowsIf {
  using type = Rows;
};
template <typename Rows>
struct KRowsIf<false, Rows> {
  struct type {};
};

template <KernelConfig C>
struct GatheredKOperands {
  typename KRowsIf<C.gather_a && C.group_axis == GroupAxis::k, GatheredKRows<C, C.tile_m>>::type a;
  typename KRowsIf<C.gather_b && C.group_axis == GroupAxis::k, GatheredKRows<C, C.tile_n>>::type b;

  /// The k-rows [k0, k0 + 64) of each gathered operand, through its index (GatheredKRows::load).
  __device__ __forceinline__ void load(const int32_t* __restrict__ a_index, const int32_t* __restrict__ b_index,
                                       int k0, int k_first, int k_end, int thread) {
    if constexpr (C.gather_a && C.group_axis == GroupAxis::k) a.load(a_index, k0, k_first, k_end, thread);
    if constexpr (C.gather_b && C.group_axis == GroupAxis::k) b.load(b_index, k0, k_first, k_end, thread);
  }
};

}  // namespace gemmops::kernels::sm90
