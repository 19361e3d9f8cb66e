// kernels/ptx/prefetch.cuh: a global line into L2 ahead of its loads
// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace gemmops::kernels::ptx {

/// The 128-byte line holding `p` brought into L2 (no register written, nothing waited for).
__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

}  // namespace gemmops::kernels::ptx
