// kernels/ptx/cluster.cuh: thread-block cluster helpers: rank, barrier, remote mbarrier arrive
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

namespace gemmops::kernels::ptx {

using ::cuda::std::uint32_t;

__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

/// Every thread of every CTA of the cluster meets here (release/acquire: shared-memory writes before
/// it, barrier inits included, are visible to the cluster after it).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

/// The shared::cluster address of `smem` (a location in this CTA) as it appears in CTA `rank`.
__device__ __forceinline__ uint32_t map_to_rank(const void* smem, uint32_t rank) {
  const uint32_t local = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
  return remote;
}

/// Arrives on an mbarrier of any CTA of the cluster (address from map_to_rank). Default semantics
/// (release at CTA scope), as the consumer only hands back shared memory it has finished reading:
/// a cluster-scope release would also wait for the epilogue's global stores to become visible.
__device__ __forceinline__ void mbarrier_arrive_cluster(uint32_t cluster_addr) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(cluster_addr) : "memory");
}

}  // namespace gemmops::kernels::ptx
