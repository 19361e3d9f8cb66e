// kernels/sm90/pipeline.cuh: a place in the grouped GEMM's ring of shared-memory stages (the stage
// and the parity of its barriers' phase)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

namespace gemmops::kernels::sm90 {

/// A place in the ring of stages: the producer's, or a consumer warpgroup's.
template <int kStages>
struct PipelineCursor {
  int stage = 0;
  ::cuda::std::uint32_t phase = 0;
  __device__ void advance() {
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1;
    }
  }
  /// Steps over `n` stages another warpgroup consumes (ping-pong).
  __device__ void skip(int n) {
    const int t = stage + n;
    stage = t % kStages;
    phase ^= static_cast<::cuda::std::uint32_t>((t / kStages) & 1);
  }
};

}  // namespace gemmops::kernels::sm90
