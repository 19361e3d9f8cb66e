// kernels/ptx/prefetch.cuh: cache prefetch hints for global memory
// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace gemmops::kernels::ptx {

/// Hint the L1 to fetch the line holding `p` (global memory) for a load soon after; holds no register.
__device__ __forceinline__ void prefetch_l1(const void* p) {
  asm volatile("prefetch.global.L1 [%0];" ::"l"(p) : "memory");
}

}  // namespace gemmops::kernels::ptx
