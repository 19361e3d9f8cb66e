// kernels/ptx/tma.cuh: bulk tensor copies global -> shared completing on an mbarrier (CCCL cuda::ptx)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/ptx>
#include <cuda/std/cstdint>

namespace gemmops::kernels::ptx {

using ::cuda::std::int32_t;
using ::cuda::std::uint64_t;

/// Hint the L1 to fetch a tensor map held in kernel parameters before its first use.
__device__ __forceinline__ void prefetch_tensor_map(const void* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(map) : "memory");
}

__device__ __forceinline__ void tma_load_2d(void* smem_dst, const void* map, int32_t c0, int32_t c1,
                                            uint64_t* bar) {
  const int32_t coords[2] = {c0, c1};
  ::cuda::ptx::cp_async_bulk_tensor(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, smem_dst, map,
                                    coords, bar);
}

__device__ __forceinline__ void tma_load_3d(void* smem_dst, const void* map, int32_t c0, int32_t c1,
                                            int32_t c2, uint64_t* bar) {
  const int32_t coords[3] = {c0, c1, c2};
  ::cuda::ptx::cp_async_bulk_tensor(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, smem_dst, map,
                                    coords, bar);
}

}  // namespace gemmops::kernels::ptx

namespace gemmops::kernels::ptx {

/// Like tma_load_2d, but the box lands at the same shared-memory offset in every CTA of
/// `cta_mask` and completes bytes on each one's barrier at `bar`'s offset.
__device__ __forceinline__ void tma_load_2d_multicast(void* smem_dst, const void* map, int32_t c0, int32_t c1,
                                                      uint64_t* bar, ::cuda::std::uint16_t cta_mask) {
  const int32_t coords[2] = {c0, c1};
  ::cuda::ptx::cp_async_bulk_tensor(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, smem_dst, map,
                                    coords, bar, cta_mask);
}

/// Like tma_load_3d, but the box lands at the same shared-memory offset in every CTA of
/// `cta_mask` and completes bytes on each one's barrier at `bar`'s offset.
__device__ __forceinline__ void tma_load_3d_multicast(void* smem_dst, const void* map, int32_t c0, int32_t c1,
                                                      int32_t c2, uint64_t* bar, ::cuda::std::uint16_t cta_mask) {
  const int32_t coords[3] = {c0, c1, c2};
  ::cuda::ptx::cp_async_bulk_tensor(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, smem_dst, map,
                                    coords, bar, cta_mask);
}

}  // namespace gemmops::kernels::ptx
