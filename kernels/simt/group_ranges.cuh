// kernels/simt/group_ranges.cuh: the ranges of the groups, read from the device-side offsets (no host
// synchronisation), clamped as the sm90 scheduler clamps them: e_g, the running maximum of
// min(max(offsets[j], 0), limit) over j <= g, is where group g ends, and group g starts where group
// g - 1 ends (M-grouped with a group_alignment: that end rounded up to it, at most limit; the group
// is empty when it does not end past its start, and the padding rows in between belong to no group).
// Malformed offsets (decreasing, negative, past the end) only make groups shorter or empty; nothing
// outside [0, limit) is read or written. The masked form needs no walk: its counts are clamped to
// [0, MaxM] where they are read.
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

/// Where a group starts whose groups before it end at `e` (running maximum): e rounded up to
/// `align` (a power of two; 1: e itself), at most `limit`. 64-bit, so e + align cannot overflow.
__device__ __forceinline__ int aligned_start(int e, int align, int limit) {
  const long long up = (static_cast<long long>(e) + align - 1) & -static_cast<long long>(align);
  return up > limit ? limit : static_cast<int>(up);
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

/// walk_groups for groups at aligned starts (group_alignment > 1; a separate walk, so that the
/// contiguous groups keep the code that has run on GPUs). Calls visit(g, begin, end) for every group
/// g whose range meets [lo, hi), in order, with the part inside; returns where the last group ends (e_{G-1}, see above) clipped to [lo, hi]: what
/// lies past it belongs to no group (the zero tail; with aligned groups it starts at the last
/// group's end, not at its rounded-up end). The whole block calls it (it synchronises; visit is
/// called by every thread alike). `staged` holds kThreads ints, `scratch` kThreads / 32. The
/// offsets are staged a block at a time; a block of groups that all end at or before lo, or all
/// start at or after hi, is skipped whole.
template <class Visit>
__device__ int walk_aligned_groups(const int32_t* offsets, int groups, int limit, int align, int lo, int hi,
                                   int* staged, int* scratch, Visit&& visit) {
  int e = 0;  // the running maximum of the clamped ends of the groups walked so far
  for (int base = 0; base < groups && e < hi; base += kThreads) {
    const int j = base + static_cast<int>(threadIdx.x);
    const int end = j < groups ? clamp_end(offsets[j], limit) : 0;
    __syncthreads();  // the previous block of groups has been read
    staged[threadIdx.x] = end;
    const int block_end = max(e, block_max(end, scratch));  // synchronises: staged is visible after it
    if (block_end <= lo || aligned_start(e, align, limit) >= hi) {  // no group of this block meets the tile
      e = block_end;
      continue;
    }
    const int count = min(kThreads, groups - base);
    for (int c = 0; c < count && e < hi; ++c) {  // once e >= hi, later groups start at or past hi
      const int start = aligned_start(e, align, limit);
      e = max(e, staged[c]);
      const int begin = max(start, lo), stop = min(e, hi);
      if (stop > begin) visit(base + c, begin, stop);
    }
  }
  return min(max(e, lo), hi);
}

}  // namespace gemmops::kernels::simt
