// kernels/ptx/tma_store.cuh: bulk tensor stores shared -> global (bulk groups), the async-proxy
// fence they need, and named barriers for one warpgroup
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

namespace gemmops::kernels::ptx {

/// Makes this thread's ordinary shared-memory stores visible to the async proxy (TMA reads next).
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/// A 4-byte store to shared memory at a shared-window address (a generic pointer into the
/// staging boxes compiled to generic ST.E stores).
__device__ __forceinline__ void st_shared_u32(::cuda::std::uint32_t addr, ::cuda::std::uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}

/// An 8-byte store (two words) to shared memory at an 8-byte aligned shared-window address.
__device__ __forceinline__ void st_shared_v2_u32(::cuda::std::uint32_t addr, ::cuda::std::uint32_t v0,
                                                 ::cuda::std::uint32_t v1) {
  asm volatile("st.shared.v2.b32 [%0], {%1, %2};\n" ::"r"(addr), "r"(v0), "r"(v1) : "memory");
}

/// Two 8x8 matrices of 16-bit elements into shared memory (stmatrix .x2), each thread holding in
/// register i its pair (row lane / 4, columns 2 (lane % 4), + 1) of matrix i, the fragment layout of
/// wgmma's accumulators; lanes 8i .. 8i + 7 give the shared-window addresses of matrix i's rows (16
/// bytes each). kTransposed: each matrix stored transposed (row k of it holds column k).
template <bool kTransposed = false>
__device__ __forceinline__ void stmatrix_x2(::cuda::std::uint32_t addr, ::cuda::std::uint32_t r0,
                                            ::cuda::std::uint32_t r1) {
  if constexpr (kTransposed)
    asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};\n" ::"r"(addr), "r"(r0), "r"(r1)
                 : "memory");
  else
    asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};\n" ::"r"(addr), "r"(r0), "r"(r1) : "memory");
}

/// A 4-byte load from shared memory at a shared-window address (volatile: it must stay after the
/// mbarrier wait that makes a TMA load's data visible, and before the stores to the same words).
__device__ __forceinline__ ::cuda::std::uint32_t ld_shared_u32(::cuda::std::uint32_t addr) {
  ::cuda::std::uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
  return v;
}

/// An 8-byte load (two words) from shared memory at an 8-byte aligned shared-window address.
__device__ __forceinline__ void ld_shared_v2_u32(::cuda::std::uint32_t addr, ::cuda::std::uint32_t& v0,
                                                 ::cuda::std::uint32_t& v1) {
  asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];\n" : "=r"(v0), "=r"(v1) : "r"(addr) : "memory");
}

/// A 2-byte store to shared memory at a shared-window address.
__device__ __forceinline__ void st_shared_u16(::cuda::std::uint32_t addr, ::cuda::std::uint16_t v) {
  asm volatile("st.shared.b16 [%0], %1;\n" ::"r"(addr), "h"(v) : "memory");
}

/// Stores the box at `smem_src` to the 3D tensor of `map` at (c0, c1, c2); clipped at its bounds.
__device__ __forceinline__ void tma_store_3d(const void* map, const void* smem_src, int c0, int c1, int c2) {
  const auto src = static_cast<::cuda::std::uint32_t>(__cvta_generic_to_shared(smem_src));
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];\n" ::"l"(map),
               "r"(c0), "r"(c1), "r"(c2), "r"(src)
               : "memory");
}

/// Stores the box at `smem_src` to the 4D tensor of `map` at (c0, c1, c2, c3); clipped at its bounds.
__device__ __forceinline__ void tma_store_4d(const void* map, const void* smem_src, int c0, int c1, int c2, int c3) {
  const auto src = static_cast<::cuda::std::uint32_t>(__cvta_generic_to_shared(smem_src));
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%1, %2, %3, %4}], [%5];\n" ::"l"(map),
               "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(src)
               : "memory");
}

__device__ __forceinline__ void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
/// Waits until all but the `kPending` most recently committed store groups have read their shared
/// memory (it may be overwritten).
template <int kPending = 0>
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(kPending) : "memory");
}
/// Waits until the committed stores are complete in global memory.
__device__ __forceinline__ void tma_store_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

/// A barrier for the `threads` threads that use barrier `id` (1..15; 0 is __syncthreads').
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace gemmops::kernels::ptx
