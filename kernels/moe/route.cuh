// kernels/moe/route.cuh: the MoE routing as a stable counting sort on the device, three launches, no
// host synchronisation and no atomics on global memory: count each chunk's pairs per expert, scan the
// counts into each chunk's first row per expert (and the experts' offsets), then place each pair at
// its row, walking the chunk in order so that equal experts keep the pairs' order (arch-neutral)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "moe/route_params.cuh"

namespace gemmops::kernels::moe {

/// A pair's bucket: its expert, or `experts` for an id outside [0, experts).
__device__ __forceinline__ int bucket_of(int id, int experts) {
  return static_cast<unsigned>(id) < static_cast<unsigned>(experts) ? id : experts;
}

/// One warp: histogram[bucket] += the pairs [begin, end) in the bucket (shared-memory atomics).
__device__ __forceinline__ void count_pairs(const RouteParams& p, int* histogram, int begin, int end, int lane) {
  for (int i = begin + lane; i < end; i += 32) atomicAdd(&histogram[bucket_of(__ldg(p.ids + i), p.experts)], 1);
}

/// One warp, 32 pairs a step in order through [begin, end): a pair's row is its bucket's next row
/// plus the lanes before it in the step with the same bucket (__match_any_sync); the lowest such
/// lane then moves the bucket's next row past them. Writes token, pair and the sorted scores.
__device__ __forceinline__ void place_pairs(const RouteParams& p, int* next_row, int begin, int end, int lane) {
  const unsigned lanes_below = (1u << lane) - 1u;
  for (int step = begin; step < end; step += 32) {
    const int i = step + lane;
    const bool live = i < end;
    const int bucket = live ? bucket_of(__ldg(p.ids + i), p.experts) : -1;
    const unsigned same = __match_any_sync(0xffffffffu, bucket);
    const int rank = __popc(same & lanes_below);
    const int row = live ? next_row[bucket] + rank : 0;
    __syncwarp();  // every lane has read its bucket's next row
    if (live && rank == 0) next_row[bucket] += __popc(same);
    __syncwarp();
    if (live) {
      p.token[row] = i / p.k;
      p.pair[i] = row;
      if (p.sorted_scores != nullptr) p.sorted_scores[row] = __ldg(p.scores + i);
    }
  }
}

/// One warp a chunk: counts[chunk][bucket] = the chunk's pairs in the bucket (a shared histogram).
__global__ void __launch_bounds__(32) route_count_kernel(const RouteParams p) {
  extern __shared__ int histogram[];
  const int buckets = p.experts + 1, lane = static_cast<int>(threadIdx.x);
  for (int e = lane; e < buckets; e += 32) histogram[e] = 0;
  __syncwarp();
  const int begin = static_cast<int>(blockIdx.x) * kChunk;
  const int end = p.pairs - begin < kChunk ? p.pairs : begin + kChunk;
  count_pairs(p, histogram, begin, end, lane);
  __syncwarp();
  int* out = p.counts + static_cast<int64_t>(blockIdx.x) * buckets;
  for (int e = lane; e < buckets; e += 32) out[e] = histogram[e];
}

/// The exclusive prefix sum of `v` over the block (kScanThreads threads), plus `carry`; returns it and
/// leaves the block's total in `sums[31]`. Every thread calls it.
__device__ __forceinline__ int block_exclusive_scan(int v, int carry, int* sums) {
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  int x = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o) x += y;
  }
  if (lane == 31) sums[warp] = x;
  __syncthreads();
  if (warp == 0) {
    int w = sums[lane];
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int y = __shfl_up_sync(0xffffffffu, w, o);
      if (lane >= o) w += y;
    }
    sums[lane] = w;
  }
  __syncthreads();
  return carry + (warp > 0 ? sums[warp - 1] : 0) + x - v;
}

/// One block: each bucket's total over the chunks, the buckets' first rows (an exclusive scan in
/// bucket order), the experts' ends, and counts[chunk][bucket] turned into the chunk's first row in
/// the bucket (its count's exclusive prefix over the chunks, plus the bucket's first row).
__global__ void __launch_bounds__(kScanThreads) route_scan_kernel(const RouteParams p) {
  extern __shared__ int first[];  // (buckets,): a total, then the bucket's first row
  __shared__ int sums[32];
  const int buckets = p.experts + 1, tid = static_cast<int>(threadIdx.x);
  for (int e = tid; e < buckets; e += kScanThreads) {
    int total = 0;
    for (int b = 0; b < p.blocks; ++b) total += p.counts[static_cast<int64_t>(b) * buckets + e];
    first[e] = total;
  }
  __syncthreads();
  int carry = 0;
  for (int e0 = 0; e0 < buckets; e0 += kScanThreads) {
    const int e = e0 + tid;
    const int v = e < buckets ? first[e] : 0;
    const int start = block_exclusive_scan(v, carry, sums);
    const int chunk_total = sums[31];
    __syncthreads();  // every thread has read `sums` before the next chunk writes it
    if (e < buckets) first[e] = start;
    carry += chunk_total;
  }
  __syncthreads();
  for (int e = tid; e < p.experts; e += kScanThreads) p.offsets[e] = first[e + 1];  // expert e ends where e + 1 starts
  for (int e = tid; e < buckets; e += kScanThreads) {
    int row = first[e];
    for (int b = 0; b < p.blocks; ++b) {
      int* c = p.counts + static_cast<int64_t>(b) * buckets + e;
      const int n = *c;
      *c = row;
      row += n;
    }
  }
}

/// One warp a chunk, its pairs placed in order from the chunk's first row in each bucket (place_pairs).
__global__ void __launch_bounds__(32) route_scatter_kernel(const RouteParams p) {
  extern __shared__ int next_row[];
  const int buckets = p.experts + 1, lane = static_cast<int>(threadIdx.x);
  const int* starts = p.counts + static_cast<int64_t>(blockIdx.x) * buckets;
  for (int e = lane; e < buckets; e += 32) next_row[e] = starts[e];
  __syncwarp();
  const int begin = static_cast<int>(blockIdx.x) * kChunk;
  const int end = p.pairs - begin < kChunk ? p.pairs : begin + kChunk;
  place_pairs(p, next_row, begin, end, lane);
}

// ---------------------------------------------------------------------------------------------------
// The wide kernels (a trial until the GPU suite runs them): the same stable counting sort with chunks
// of p.chunk pairs (kWideMinChunk or more, so a routing of 65536 pairs is 256 chunks, not 16), the
// counts stored bucket-major, so one flat exclusive scan over (bucket, chunk) gives every chunk's
// first row in every bucket: the bucket order first, then the chunk order, as the sort's stability
// wants. The scan reads `counts` and writes `starts`, so its loads need not wait for its stores.

/// One warp a chunk: counts[bucket][chunk] = the chunk's pairs in the bucket.
__global__ void __launch_bounds__(32) route_count_wide_kernel(const RouteParams p) {
  extern __shared__ int histogram[];
  const int buckets = p.experts + 1, lane = static_cast<int>(threadIdx.x), chunk = static_cast<int>(blockIdx.x);
  for (int e = lane; e < buckets; e += 32) histogram[e] = 0;
  __syncwarp();
  const int begin = chunk * p.chunk;
  const int end = p.pairs - begin < p.chunk ? p.pairs : begin + p.chunk;
  count_pairs(p, histogram, begin, end, lane);
  __syncwarp();
  for (int e = lane; e < buckets; e += 32) p.counts[static_cast<int64_t>(e) * p.blocks + chunk] = histogram[e];
}

/// One block: starts = the exclusive prefix sum of counts, flat in (bucket, chunk) order; each thread
/// sums a contiguous run, the runs' sums are scanned once, then each thread writes its run's starts.
/// Expert e ends where bucket e + 1 starts (chunk 0 of it); without chunks every expert ends at 0.
__global__ void __launch_bounds__(kScanThreads) route_scan_wide_kernel(const RouteParams p) {
  __shared__ int sums[32];
  const int buckets = p.experts + 1, tid = static_cast<int>(threadIdx.x);
  const int n = buckets * p.blocks, run = (n + kScanThreads - 1) / kScanThreads;
  const int begin = tid * run < n ? tid * run : n, end = begin + run < n ? begin + run : n;
  const int* __restrict__ counts = p.counts;
  int* __restrict__ starts = p.starts;
  int total = 0;
  for (int i = begin; i < end; ++i) total += counts[i];
  int row = block_exclusive_scan(total, 0, sums);
  for (int i = begin; i < end; ++i) {
    const int c = counts[i];
    starts[i] = row;
    row += c;
  }
  __syncthreads();  // every start is written before the offsets read them
  for (int e = tid; e < p.experts; e += kScanThreads)
    p.offsets[e] = p.blocks > 0 ? starts[static_cast<int64_t>(e + 1) * p.blocks] : 0;
}

/// One warp a chunk, 32 pairs a step in order, as route_scatter_kernel, from starts[bucket][chunk].
__global__ void __launch_bounds__(32) route_scatter_wide_kernel(const RouteParams p) {
  extern __shared__ int next_row[];
  const int buckets = p.experts + 1, lane = static_cast<int>(threadIdx.x), chunk = static_cast<int>(blockIdx.x);
  for (int e = lane; e < buckets; e += 32) next_row[e] = p.starts[static_cast<int64_t>(e) * p.blocks + chunk];
  __syncwarp();
  const int begin = chunk * p.chunk;
  const int end = p.pairs - begin < p.chunk ? p.pairs : begin + p.chunk;
  place_pairs(p, next_row, begin, end, lane);
}

}  // namespace gemmops::kernels::moe
