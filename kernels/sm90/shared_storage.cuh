// kernels/sm90/shared_storage.cuh: the shared-memory carve-up of one CTA of the grouped GEMM: the
// ring of A and B stages, the TMA store's staging, the barriers and the scheduler table
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

#include "sm90/config.cuh"
#include "sm90/tile_scheduler.cuh"

namespace gemmops::kernels::sm90 {

using ::cuda::std::uint32_t;
using ::cuda::std::uint64_t;
using ::cuda::std::uint8_t;

/// The shared-memory carve-up of one CTA: one 32-bit shared address, and each part's generic pointer
/// computed from it where it is used. NVRTC keeps shared pointers 64-bit (nvcc makes them 32-bit and
/// has no spill here), so the nine pointers this held cost the 128x192 ping-pong consumers the
/// registers they spilled (bench/NOTES.md v16).
template <KernelConfig C>
struct SharedStorage {
  uint32_t base;    // 1024-byte aligned shared address of the stages
  int groups;
  static constexpr uint32_t kB = C.stages * C.a_stage_bytes();
  static constexpr uint32_t kEpi = kB + C.stages * C.b_stage_bytes();
  static constexpr uint32_t kFull = kEpi + C.epilogue_bytes();
  static constexpr uint32_t kEmpty = kFull + 8 * C.stages;
  static constexpr uint32_t kTurn = kEmpty + 8 * C.stages;
  static constexpr uint32_t kHLoad = kTurn + 16;  // KernelConfig::loads_h_by_tma: one a consumer warpgroup
  static constexpr uint32_t kTables = kHLoad + (C.loads_h_by_tma() ? 16 : 0);
  static_assert(!C.loads_h_by_tma() || C.consumers <= 2, "16 bytes hold two consumer warpgroups' h-load barriers");

  __device__ static void* generic(uint32_t shared_address) {
    return __cvta_shared_to_generic(static_cast<size_t>(shared_address));
  }
  __device__ uint8_t* a() const { return static_cast<uint8_t*>(generic(base)); }
  __device__ uint8_t* b() const { return static_cast<uint8_t*>(generic(base + kB)); }
  __device__ uint8_t* epi() const { return static_cast<uint8_t*>(generic(base + kEpi)); }
  __device__ uint64_t* full(int i) const { return static_cast<uint64_t*>(generic(base + kFull + 8 * i)); }
  __device__ uint64_t* empty(int i) const { return static_cast<uint64_t*>(generic(base + kEmpty + 8 * i)); }
  __device__ uint64_t* turn(int i) const { return static_cast<uint64_t*>(generic(base + kTurn + 8 * i)); }
  __device__ uint64_t* h_load(int i) const { return static_cast<uint64_t*>(generic(base + kHLoad + 8 * i)); }
  __device__ SchedulerTable table() const {
    int* tables = static_cast<int*>(generic(base + kTables));
    return {tables, tables + groups, tables + 2 * groups};
  }

  __device__ explicit SharedStorage(uint8_t* raw, int g) : groups(g) {
    const uint32_t shared = static_cast<uint32_t>(__cvta_generic_to_shared(raw));
    base = (shared + 1023u) & ~1023u;
  }
};

}  // namespace gemmops::kernels::sm90
