// kernels/simt/group_ranges.cuh: the ranges of the groups, read from the device-side offsets (no host
// synchronisation), clamped as the sm90 scheduler clamps them: group g ends at the running maximum
// of min(max(offsets[j], 0), limit) over j <= g and starts where group g - 1 ends. Malformed offsets
// (decreasing, negative, past the end) only make groups shorter or empty; nothing outside
// [0, limit) is read or written.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "simt/params.cuh"

namespace gemmops::kernels::simt {

__device__ __forceinline__ int clamp_end(int32_t raw, int limit) { return raw < 0 ? 0 : raw > limit ? limit : raw; }

/// The maximum of `v` over the block; every thread gets it. `scratch` holds kThreads / 32 ints.
__device__ __forceinline__ int block_max(int v, int* scratch) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, d));
  const int warp = static_cast<int>(threadIdx.x) / 32;
  if (threadIdx.x % 32 == 0) scratch[warp] = v;
  __syncthreads();
  v = scratch[0];
  for (int w = 1; w < kThreads / 32; ++w) v = max(v, scratch[w]);
  __syncthreads();  // scratch may be reused right after
  return v;
}

/// Group g's clamped range [*begin, *end) within [0, limit) (K-grouped: its K range). The whole
/// block calls it; it reads offsets[0..g] once, a few per thread.
__device__ __forceinline__ void group_range(const int32_t* offsets, int g, int limit, int* scratch, int* begin,
                                            int* end) {
  int before = 0;
  for (int j = static_cast<int>(threadIdx.x); j < g; j += kThreads) before = max(before, clamp_end(offsets[j], limit));
  before = block_max(before, scratch);
  *begin = before;
  *end = max(before, clamp_end(offsets[g], limit));
}

/// Calls visit(g, begin, end) for every group g whose clamped range meets [lo, hi), in order, with
/// the part inside; returns where the last group ends inside [lo, hi] (hi when the groups cover
/// it): what lies past it belongs to no group. The whole block calls it (it synchronises; visit
/// is called by every thread alike). `staged` holds kThreads ints. The offsets are staged a block
/// at a time, and a block of groups that all end at or before lo is skipped whole.
template <class Visit>
__device__ int walk_groups(const int32_t* offsets, int groups, int limit, int lo, int hi, int* staged,
                           Visit&& visit) {
  int start = lo;  // every group before the ones visited ends at or before lo
  for (int base = 0; base < groups && start < hi; base += kThreads) {
    const int j = base + static_cast<int>(threadIdx.x);
    const int end = j < groups ? clamp_end(offsets[j], limit) : 0;
    __syncthreads();  // the previous block of groups has been read
    staged[threadIdx.x] = end;
    if (!__syncthreads_or(end > start)) continue;
    const int count = min(kThreads, groups - base);
    for (int c = 0; c < count && start < hi; ++c) {
      const int group_end = min(max(start, staged[c]), hi);
      if (group_end > start) visit(base + c, start, group_end);
      start = max(start, staged[c]);
    }
  }
  return min(start, hi);
}

}  // namespace gemmops::kernels::simt
