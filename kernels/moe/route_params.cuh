// kernels/moe/route_params.cuh: the parameters of the routing kernels (route.cuh), shared verbatim by
// the host side (src/moe) and the device code. Plain C++: no CUDA header.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "common/fixed_width_ints.cuh"

namespace gemmops::kernels::moe {

/// One routing (see RouteArguments in moe.hpp): the (token, choice) pairs sorted by expert, stably.
/// Bucket e < experts holds the pairs routed to expert e; bucket `experts` the others (sentinels).
struct RouteParams {
  const int* ids;         // (pairs,) = (T, k) flattened: each pair's expert
  const float* scores;    // (pairs,) or null
  int* counts;            // workspace (blocks, experts + 1): per chunk and bucket, a count, then a start
  int* offsets;           // (experts,) each expert's exclusive end row
  int* token;             // (pairs,) each sorted row's token
  int* pair;              // (pairs,) each pair's sorted row
  float* sorted_scores;   // (pairs,) each sorted row's score, or null
  int pairs;
  int k;
  int experts;
  int blocks;             // chunks of kChunk pairs (the wide kernels: of `chunk` pairs)
  // The wide kernels only (route_*_wide_kernel, a trial): many short chunks, so every SM has one.
  int chunk;              // pairs a chunk, a multiple of 32
  int* starts;            // workspace (buckets, blocks) beside `counts` (buckets, blocks): each chunk's first row
};

/// Pairs of one chunk, walked by one warp in order (the stable rank needs the order).
inline constexpr int kChunk = 4096;
/// Threads of the one block that scans the counts.
inline constexpr int kScanThreads = 1024;
/// The most experts the kernels' shared memory holds a bucket for (buckets + 1 ints <= 32 KiB).
inline constexpr int kMaxExperts = 8192;
/// The wide kernels: at least this many pairs a chunk, and at most this many (bucket, chunk) counts,
/// which one block scans (the workspace is twice that many ints at most, 2 MiB).
inline constexpr int kWideMinChunk = 256;
inline constexpr int kWideMaxCounts = 1 << 18;

}  // namespace gemmops::kernels::moe
