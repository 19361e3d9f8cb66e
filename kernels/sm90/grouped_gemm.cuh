// kernels/sm90/grouped_gemm.cuh: persistent, warp-specialised grouped GEMM for sm_90a.
// One producer warp streams A and B tiles by TMA into a ring of swizzled shared-memory stages;
// consumer warpgroups (64 rows each) run wgmma on them and store through the epilogue. The tile
// scheduler enumerates the tiles of all groups from the device-side offsets.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

#include "ptx/cluster.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "ptx/warp.cuh"
#include "ptx/wgmma.cuh"
#include "sm90/config.cuh"
#include "sm90/epilogue.cuh"
#include "sm90/epilogue_tma.cuh"
#include "sm90/k_tail.cuh"
#include "sm90/mma.cuh"
#include "sm90/params.cuh"
#include "sm90/tile_scheduler.cuh"

namespace gemmops::kernels::sm90 {

using ::cuda::std::uint32_t;
using ::cuda::std::uint64_t;
using ::cuda::std::uint8_t;
using ::cuda::std::uintptr_t;

/// The shared-memory carve-up of one CTA.
template <KernelConfig C>
struct SharedStorage {
  uint8_t* a;        // (STAGES, TILE_M, TILE_K) K-major or (STAGES, TILE_M/64, TILE_K, 64) M-major, 16-bit
  uint8_t* b;        // (STAGES, TILE_N, TILE_K) K-major, or (STAGES, TILE_N/64, TILE_K, 64) N-major
  uint8_t* epi;      // (CONSUMERS, TILE_N/64, 64, 64) staging of the TMA epilogue (empty otherwise)
  uint64_t* full;    // (STAGES,) TMA bytes landed
  uint64_t* empty;   // (STAGES,) consumers done with the stage
  SchedulerTable table;

  __device__ explicit SharedStorage(uint8_t* raw, int groups) {
    uint8_t* base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
    a = base;
    b = a + C.stages * C.a_stage_bytes();
    epi = b + C.stages * C.b_stage_bytes();
    full = reinterpret_cast<uint64_t*>(epi + C.epilogue_bytes());
    empty = full + C.stages;
    int* tables = reinterpret_cast<int*>(empty + C.stages);
    table = {tables, tables + groups, tables + 2 * groups};
  }
};

// ---------------------------------------------------------------- producer (one warp)
// A K-major operand is read by TMA along K from 16-byte-aligned starts only (an unaligned start in
// the contiguous dimension is an illegal instruction), so K-grouped k-blocks then start at a
// multiple of 8 below the group's first k, and the k before it are cleared like the tail.
template <KernelConfig C>
inline constexpr int kKBlockAlign =
    C.group_axis == GroupAxis::k && (C.a_major == AMajor::k || C.b_major == BMajor::k) ? 8 : 1;

template <KernelConfig C>
using Tiles = TileIterator<C.unit_m(), C.tile_n, C.cluster_m, C.group_axis, kKBlockAlign<C>>;

__device__ __forceinline__ int k_blocks_of(const TileCoord& tc) { return (tc.k_end - tc.k_begin + 63) / 64; }

template <KernelConfig C>
__device__ __forceinline__ void produce(const GroupedGemmParams& p, SharedStorage<C>& s, uint32_t rank) {
  int stage = 0;
  uint32_t phase = 0;
  for (Tiles<C> it(p, s.table); it.valid(); it.advance()) {
    const TileCoord tc = it.current();
    const int a_row0 = tc.a_row0 + static_cast<int>(rank) * C.tile_m;
    // B's group coordinate: K-grouped B is one (K, N) matrix.
    const int b_group = C.group_axis == GroupAxis::m ? tc.group : 0;
    const int k_blocks = k_blocks_of(tc);
    for (int kb = 0; kb < k_blocks; ++kb) {
      ptx::mbarrier_wait(&s.empty[stage], phase ^ 1);
      uint64_t* bar = &s.full[stage];
      ptx::mbarrier_arrive_expect_tx(bar, C.stage_bytes());
      const int k0 = tc.k_begin + kb * C.tile_k;
      uint8_t* a_dst = s.a + stage * C.a_stage_bytes();
      if constexpr (C.a_major == AMajor::k) {
        ptx::tma_load_2d(a_dst, &p.map_a, k0, a_row0, bar);
      } else {
#pragma unroll
        for (int j = 0; j < C.tile_m / 64; ++j)  // one 64-row M atom per box
          ptx::tma_load_2d(a_dst + j * 64 * C.tile_k * 2, &p.map_a, a_row0 + 64 * j, k0, bar);
      }
      uint8_t* b_dst = s.b + stage * C.b_stage_bytes();
      if constexpr (C.cluster_m == 1) {
        if constexpr (C.b_major == BMajor::k) {
          ptx::tma_load_3d(b_dst, &p.map_b, k0, tc.col0, b_group, bar);
        } else {
#pragma unroll
          for (int j = 0; j < C.tile_n / 64; ++j)  // one 64-wide N atom per box
            ptx::tma_load_3d(b_dst + j * 64 * C.tile_k * 2, &p.map_b, tc.col0 + 64 * j, k0, b_group, bar);
        }
      } else {
        // Each CTA loads its share of the B tile and multicasts it to the whole cluster, which
        // works on the same group and columns: B crosses L2 once per cluster instead of per CTA.
        constexpr ::cuda::std::uint16_t kMask = (1u << C.cluster_m) - 1;
        if constexpr (C.b_major == BMajor::k) {
          const int r0 = static_cast<int>(rank) * C.b_rows_per_cta();
          ptx::tma_load_3d_multicast(b_dst + r0 * C.tile_k * 2, &p.map_b, k0, tc.col0 + r0, b_group, bar, kMask);
        } else {
#pragma unroll
          for (int j = static_cast<int>(rank); j < C.tile_n / 64; j += C.cluster_m)
            ptx::tma_load_3d_multicast(b_dst + j * 64 * C.tile_k * 2, &p.map_b, tc.col0 + 64 * j, k0, b_group, bar,
                                       kMask);
        }
      }
      if (++stage == C.stages) {
        stage = 0;
        phase ^= 1;
      }
    }
  }
}

// ---------------------------------------------------------------- consumers (warpgroups 1..)
/// All consumer threads clear k outside [lo, hi) of the stage's A and B tiles, then make the
/// writes visible to the MMA (async proxy) before any warpgroup issues it.
template <KernelConfig C>
__device__ __forceinline__ void clear_k_outside(SharedStorage<C>& s, int stage, int lo, int hi) {
  constexpr int kThreads = 128 * C.consumers;
  constexpr int kBarrier = 1 + C.consumers;  // after the TMA epilogue's per-warpgroup barriers
  const int t = static_cast<int>(threadIdx.x) - 128;
  zero_k_outside<C.a_major == AMajor::k>(s.a + stage * C.a_stage_bytes(), C.tile_m, lo, hi, t, kThreads);
  zero_k_outside<C.b_major == BMajor::k>(s.b + stage * C.b_stage_bytes(), C.tile_n, lo, hi, t, kThreads);
  ptx::fence_proxy_async_shared();
  ptx::named_barrier_sync(kBarrier, kThreads);
}

template <KernelConfig C>
__device__ __forceinline__ void consume(const GroupedGemmParams& p, SharedStorage<C>& s, int consumer, uint32_t rank) {
  constexpr int kTransA = C.a_major == AMajor::m ? 1 : 0;
  constexpr int kTransB = C.b_major == BMajor::n ? 1 : 0;
  float acc[C.tile_n / 2];  // (64, TILE_N) fp32 fragment of this warpgroup
  int stage = 0;
  uint32_t phase = 0;
  const bool release_lane = (threadIdx.x % 32) == 0;
  // A stage is free again once the consumers of every CTA that receives its B multicast are done.
  auto release = [&](int st) {
    if constexpr (C.cluster_m == 1) {
      ptx::mbarrier_arrive(&s.empty[st]);
    } else {
#pragma unroll
      for (int c = 0; c < C.cluster_m; ++c) ptx::mbarrier_arrive_cluster(ptx::map_to_rank(&s.empty[st], c));
    }
  };
  for (Tiles<C> it(p, s.table); it.valid(); it.advance()) {
    const TileCoord tc = it.current();
    const int row0 = tc.row0 + static_cast<int>(rank) * C.tile_m;
    const int k_blocks = k_blocks_of(tc);
    // A warpgroup whose 64 rows all lie past the group's end (the last tile of a group, or the
    // second CTA of a cluster) has nothing to compute or store: it only keeps the pipeline going,
    // and the tensor cores are the other warpgroup's alone. Uniform across the warpgroup.
    const bool idle = row0 + consumer * 64 >= tc.row_end;
    if (k_blocks == 0) {  // an empty K range (K-grouped) or K = 0: the result is zeros
#pragma unroll
      for (int i = 0; i < C.tile_n / 2; ++i) acc[i] = 0.f;
    }
    int prev_stage = -1;
    for (int kb = 0; kb < k_blocks; ++kb) {
      ptx::mbarrier_wait(&s.full[stage], phase);
      if constexpr (C.group_axis == GroupAxis::k) {
        const int k0 = tc.k_begin + kb * C.tile_k;
        const int lo = tc.k_first > k0 ? tc.k_first - k0 : 0;
        const int hi = tc.k_end - k0 < C.tile_k ? tc.k_end - k0 : C.tile_k;
        if (lo > 0 || hi < C.tile_k) clear_k_outside<C>(s, stage, lo, hi);
      }
      // Either major, this warpgroup's 64 rows of A are one contiguous 8 KiB atom of the stage.
      const uint8_t* a_tile = s.a + stage * C.a_stage_bytes() + consumer * 64 * C.tile_k * 2;
      const uint8_t* b_tile = s.b + stage * C.b_stage_bytes();
      const uint64_t desc_a = kTransA ? ptx::make_smem_desc_sw128(a_tile, 64 * C.tile_k * 2, 1024)
                                      : ptx::make_smem_desc_sw128(a_tile, 16, 1024);
      const uint64_t desc_b = kTransB ? ptx::make_smem_desc_sw128(b_tile, 64 * C.tile_k * 2, 1024)
                                      : ptx::make_smem_desc_sw128(b_tile, 16, 1024);
      if (!idle) {
        ptx::fence_registers(acc);
        ptx::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < C.tile_k / 16; ++kk) {
          // K-major: 16 elements = 32 bytes along the swizzled row; MN-major: 16 k-rows of 128 bytes.
          const uint32_t a_step = kTransA ? kk * 16 * 128 : kk * 32;
          const uint32_t b_step = kTransB ? kk * 16 * 128 : kk * 32;
          mma_k16<C.tile_n, C.ab, kTransA, kTransB>(acc, ptx::desc_advance(desc_a, a_step),
                                                    ptx::desc_advance(desc_b, b_step), (kb > 0 || kk > 0) ? 1 : 0);
        }
        ptx::wgmma_commit();
        ptx::fence_registers(acc);
      }
      ptx::wgmma_wait<1>();  // the previous stage's MMAs are done: hand it back to the producer
      if (prev_stage >= 0 && release_lane) release(prev_stage);
      prev_stage = stage;
      if (++stage == C.stages) {
        stage = 0;
        phase ^= 1;
      }
    }
    ptx::wgmma_wait<0>();
    ptx::fence_registers(acc);
    if (prev_stage >= 0 && release_lane) release(prev_stage);
    if (idle) continue;
    if constexpr (C.epilogue == 1) {
      TmaStoreEpilogue<C.out>::template store<C.tile_n>(acc, p, s.epi + consumer * 64 * C.tile_n * 2, consumer,
                                                        row0 + consumer * 64, tc.row_end, tc.col0);
    } else {
      StoreEpilogue<C.out>::template store<C.tile_n>(acc, p.out, p.out_row_stride, row0 + consumer * 64,
                                                     tc.row_end, tc.col0, p.n);
    }
  }
}

// ---------------------------------------------------------------- kernel
template <KernelConfig C>
__global__ void __launch_bounds__(C.threads(), 1) grouped_gemm_kernel(const __grid_constant__ GroupedGemmParams p) {
  static_assert(C.tile_m == 64 * C.consumers, "each consumer warpgroup owns 64 rows of the tile");
  static_assert(C.tile_k == 64, "tile_k is one 128-byte swizzle row of 16-bit elements");
  static_assert(C.ab != ElemType::fp32, "fp32 inputs have no wgmma path here");
  static_assert(C.cluster_m == 1 || C.cluster_m == 2, "clusters of 1 or 2 CTAs along M");
  static_assert(C.epilogue == 0 || C.out != ElemType::fp32, "the TMA epilogue stages 16-bit outputs");
  static_assert(C.b_major == BMajor::k || (C.tile_n / 64) % C.cluster_m == 0, "N-major B splits into whole atoms");
  static_assert(C.a_major == AMajor::k || C.tile_m % 64 == 0, "M-major A loads whole 64-row atoms");
  extern __shared__ uint8_t smem_raw[];
  SharedStorage<C> s(smem_raw, p.groups);

  // ---- setup: barriers and the scheduler table, by the whole CTA
  const int warpgroup = threadIdx.x / 128;
  if (threadIdx.x == 0) {
    ptx::prefetch_tensor_map(&p.map_a);
    ptx::prefetch_tensor_map(&p.map_b);
    for (int i = 0; i < C.stages; ++i) {
      ptx::mbarrier_init(&s.full[i], 1);
      ptx::mbarrier_init(&s.empty[i], C.consumers * 4 * C.cluster_m);  // lane 0 of every consumer warp
    }
    ptx::fence_barrier_init();
  }
  build_scheduler_table<C.unit_m(), C.tile_n, C.group_axis>(p, s.table);
  __syncthreads();
  const uint32_t rank = C.cluster_m > 1 ? ptx::cluster_ctarank() : 0;
  // The peer's barriers must be initialised before its multicasts or arrivals can reach them.
  if constexpr (C.cluster_m > 1) ptx::cluster_sync();

  // ---- roles: warpgroup 0 produces (one warp issues TMA), the others consume
  if (warpgroup == 0) {
    ptx::setmaxnreg_dec<40>();
    if (threadIdx.x / 32 == 0 && ptx::elect_one()) produce<C>(p, s, rank);
    __syncwarp();
  } else {
    ptx::setmaxnreg_inc<C.consumers == 1 ? 240 : 232>();
    consume<C>(p, s, warpgroup - 1, rank);
    if constexpr (C.epilogue == 1) TmaStoreEpilogue<C.out>::finish();
  }
  // No CTA may leave while a peer can still multicast into its shared memory or arrive on its barriers.
  if constexpr (C.cluster_m > 1) ptx::cluster_sync();
}

}  // namespace gemmops::kernels::sm90
