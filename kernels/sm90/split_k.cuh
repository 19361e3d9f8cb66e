// kernels/sm90/split_k.cuh: the fix-up of split-K tiles. The k_splits units of a tile run on
// different CTAs at about the same time; units 0 .. k_splits - 2 write their fp32 accumulators to
// a slot of the workspace and count themselves on the slot's flag; the last unit waits for the
// count, adds the partials to its own accumulators and stores the tile through the epilogue.
// Partials keep the wgmma fragment order (register-major, thread-minor), so every write and read
// is a coalesced 16-byte access and no shuffles are needed.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "ptx/global_flag.cuh"
#include "ptx/tma_store.cuh"
#include "sm90/config.cuh"
#include "sm90/params.cuh"
#include "sm90/tile_scheduler.cuh"

namespace gemmops::kernels::sm90 {

/// The slot of one warpgroup's rows of one tile: a cluster's CTAs and a cooperative tile's
/// warpgroups each own their rows, so each has its own slot.
template <KernelConfig C>
__device__ __forceinline__ int split_k_slot(const TileCoord& tc, unsigned rank, int consumer) {
  constexpr int kParts = C.pingpong() ? 1 : C.consumers;
  return (tc.tile * C.cluster_size() + static_cast<int>(rank)) * kParts + (C.pingpong() ? 0 : consumer);
}

/// Returns true when this unit holds the tile's whole sum in `acc` and must store it; false when
/// it wrote its partial (and must not store). Called by all 128 threads of the warpgroup;
/// `barrier` is this warpgroup's own named barrier (warpgroup_barrier, barriers.cuh).
template <KernelConfig C, int kAtoms>
__device__ __forceinline__ bool split_k_fixup(float (&acc)[kAtoms][C.tile_n / 2], const SplitKParams& p,
                                              const TileCoord& tc, int slot, int barrier) {
  constexpr int kVectors = kAtoms * C.tile_n / 8;  // float4s per thread
  const int t = threadIdx.x % 128;
  const long long slot_floats = static_cast<long long>(kAtoms) * 64 * C.tile_n;
  float4* slot_base = reinterpret_cast<float4*>(p.partials + static_cast<long long>(slot) * (p.k_splits - 1) * slot_floats);
  int* flag = p.split_flags + slot;
  if (tc.split < p.k_splits - 1) {
    float4* mine = slot_base + tc.split * (slot_floats / 4);
#pragma unroll
    for (int v = 0; v < kVectors; ++v) {
      const int a = v / (C.tile_n / 8), i = 4 * (v % (C.tile_n / 8));
      __stcg(mine + v * 128 + t, make_float4(acc[a][i], acc[a][i + 1], acc[a][i + 2], acc[a][i + 3]));
    }
    ptx::named_barrier_sync(barrier, 128);  // every thread's partial is written before the count
    if (t == 0) ptx::flag_add_release(flag, 1);
    return false;
  }
  if (t == 0) {
    // The other units of this tile started with it or before it: a short wait.
    ptx::flag_wait_at_least(flag, p.k_splits - 1);
  }
  ptx::named_barrier_sync(barrier, 128);
  for (int s = 0; s < p.k_splits - 1; ++s) {
    const float4* theirs = slot_base + s * (slot_floats / 4);
#pragma unroll
    for (int v = 0; v < kVectors; ++v) {
      const int a = v / (C.tile_n / 8), i = 4 * (v % (C.tile_n / 8));
      const float4 x = __ldcg(theirs + v * 128 + t);
      acc[a][i] += x.x;
      acc[a][i + 1] += x.y;
      acc[a][i + 2] += x.z;
      acc[a][i + 3] += x.w;
    }
  }
  return true;
}

}  // namespace gemmops::kernels::sm90
