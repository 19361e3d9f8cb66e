// kernels/ptx/cp_async.cuh: 16-byte cp.async copies global -> shared that signal an mbarrier (the
// gathered A's producer: Hopper's TMA has no row gather)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

namespace gemmops::kernels::ptx {

using ::cuda::std::uint32_t;

/// Copies the first `src_bytes` (0..16) of the 16 bytes at `src` (16-byte aligned) to `smem_dst`
/// and zero-fills the rest: 0 writes 16 zeros and reads nothing (rows outside the group, K past
/// the end). .cg: cached in L2 only, as the row is read once per CTA and tile.
__device__ __forceinline__ void cp_async_16_zfill(void* smem_dst, const void* src, uint32_t src_bytes) {
  const auto dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}

/// Arrives on `bar` once every cp.async this thread issued before has landed. .noinc: the arrival
/// is one of those the barrier was initialised to expect (its count includes the copying threads),
/// not an extra pending one.
__device__ __forceinline__ void cp_async_mbarrier_arrive_noinc(::cuda::std::uint64_t* bar) {
  const auto b = static_cast<uint32_t>(__cvta_generic_to_shared(bar));
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(b) : "memory");
}

}  // namespace gemmops::kernels::ptx
