// kernels/ptx/wgmma.cuh: warpgroup MMA plumbing: fences, commit/wait, shared-memory matrix descriptors
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

#include "ptx/wgmma_mma.cuh"

namespace gemmops::kernels::ptx {

using ::cuda::std::uint32_t;
using ::cuda::std::uint64_t;

/// Orders register accesses of the accumulators before the next wgmma (PTX: wgmma.fence).
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
/// Waits until at most `kPending` committed wgmma groups are still running.
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}

/// Keeps the compiler from moving accumulator reads/writes across wgmma boundaries.
template <int kRegs>
__device__ __forceinline__ void fence_registers(float (&d)[kRegs]) {
#pragma unroll
  for (int i = 0; i < kRegs; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

/// A shared-memory matrix descriptor for a tile written by TMA with the 128-byte swizzle.
/// K-major operand: rows of 64 16-bit elements (128 B); 8-row atoms 1024 B apart (stride offset).
/// MN-major operand: rows of 64 MN-elements per k; 8-k atoms 1024 B apart (stride offset) and
/// 64-wide MN atoms `mn_atom_bytes` apart (leading offset).
__device__ __forceinline__ uint64_t make_smem_desc_sw128(const void* smem, uint32_t leading_bytes,
                                                         uint32_t stride_bytes) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  uint64_t desc = 0;
  desc |= static_cast<uint64_t>((addr & 0x3FFFF) >> 4);
  desc |= static_cast<uint64_t>((leading_bytes & 0x3FFFF) >> 4) << 16;
  desc |= static_cast<uint64_t>((stride_bytes & 0x3FFFF) >> 4) << 32;
  desc |= static_cast<uint64_t>(1) << 62;  // swizzle mode 1 = 128-byte swizzle
  return desc;
}

/// Advances a descriptor's start address by `bytes` (multiple of 16).
__device__ __forceinline__ uint64_t desc_advance(uint64_t desc, uint32_t bytes) { return desc + (bytes >> 4); }

}  // namespace gemmops::kernels::ptx
