// kernels/sm90/grouped_gemm.cuh: persistent, warp-specialised grouped GEMM for sm_90a.
// One producer warp streams A and B tiles by TMA into a ring of swizzled shared-memory stages (a
// gathered A: the producer warpgroup copies A's rows by cp.async, gather_a.cuh; mainloop.cuh);
// consumer warpgroups run wgmma on them and store through the epilogue: cooperatively (64 rows of
// one tile each) or ping-pong (whole tiles in turn, one's epilogue under the other's main loop). The tile
// scheduler enumerates the tiles of all groups from the device-side offsets; with split-K a tile's
// K is summed by several units, fixed up in split_k.cuh.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

#include "ptx/cluster.cuh"
#include "ptx/griddep.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "ptx/warp.cuh"
#include "ptx/wgmma.cuh"
#include "sm90/barriers.cuh"
#include "sm90/config.cuh"
#include "sm90/epilogue.cuh"
#include "sm90/epilogue_op.cuh"
#include "sm90/epilogue_tma.cuh"
#include "sm90/gather_a.cuh"
#include "sm90/mainloop.cuh"
#include "sm90/mainloop_fp8.cuh"
#include "sm90/mma.cuh"
#include "sm90/params.cuh"
#include "sm90/pipeline.cuh"
#include "sm90/shared_storage.cuh"
#include "sm90/split_k.cuh"
#include "sm90/stage_loads.cuh"
#include "sm90/tile_scheduler.cuh"

namespace gemmops::kernels::sm90 {

using ::cuda::std::uint32_t;
using ::cuda::std::uint64_t;
using ::cuda::std::uint8_t;
using ::cuda::std::uintptr_t;

/// The main loop part, chosen by the operands' element type: e4m3 (block-scaled, k32 MMAs,
/// promoted per 128 K) or 16-bit. Both have load_tile, mma_tile, drain and release.
/// (A specialisation, not cuda::std::conditional_t: <cuda/std/type_traits> made NVRTC emit its
/// constants as globals into every kernel's PTX.)
template <KernelConfig C, bool kFp8 = C.ab == ElemType::e4m3>
struct MainloopPart {
  using type = Mainloop<C>;
};
template <KernelConfig C>
struct MainloopPart<C, true> {
  using type = Fp8Mainloop<C>;
};
template <KernelConfig C>
using MainloopOf = typename MainloopPart<C>::type;

/// This CTA's tile of a scheduler unit: with a cluster along N, CTA r takes the unit's r-th column
/// tile (one past N when N has an odd number of tiles: it loads its share of A for its peer,
/// multiplies B's zero fill and stores nothing). Clusters along M offset the rows where they are read.
template <KernelConfig C>
__device__ __forceinline__ TileCoord cta_tile(TileCoord tc, uint32_t rank) {
  if constexpr (C.cluster_n > 1) tc.col0 += static_cast<int>(rank) * C.tile_n;
  if constexpr (C.pairs_last_unit()) {  // a paired unit: the CTAs side by side along N
    if (tc.paired) tc.col0 += static_cast<int>(rank) * C.tile_n;
  }
  return tc;
}

// ---------------------------------------------------------------- producer (one thread; gathered A: a warpgroup)
/// The producer: one elected thread (TMA for A and B), or with a gathered operand all 128 threads
/// of the producer warpgroup (`thread`). It walks the scheduler's tiles as the consumers do, and
/// the main loop loads each one's k-blocks into the ring (Mainloop::load_tile).
template <KernelConfig C>
__device__ __forceinline__ void produce(const GroupedGemmParams& p, SharedStorage<C>& s, uint32_t rank, int thread) {
  PipelineCursor<C.stages> ring;
  for (Tiles<C> it(p.scheduler, p.split_k.k_splits, s.table()); it.valid(); it.advance())
    MainloopOf<C>::load_tile(p.mainloop, p.scheduler, s, cta_tile<C>(it.current(), rank), rank, thread, ring);
}

// ---------------------------------------------------------------- consumers (warpgroups 1..)
// Multiply-shift divisions in the scheduler (TileIterator's kFastDivide) for the consumers of
// cooperative kernels only: the producer warp runs ahead of them by the ring (and has 40 registers,
// which the divisors' state made spill), and ping-pong kernels measured slower with them.
template <KernelConfig C>
inline constexpr bool kConsumersDivideFast = C.schedule == KernelSchedule::cooperative && C.consumers > 1;

/// How a tile leaves: direct 16-byte stores or TMA bulk stores from shared memory.
template <KernelConfig C, bool kTma = C.epilogue == 1>
struct StoreMechanismOf {
  using type = StoreEpilogue<C.out>;
};
template <KernelConfig C>
struct StoreMechanismOf<C, true> {
  using type = TmaStoreEpilogue<C.out, C.out_m_major>;
};
template <KernelConfig C>
using StoreMechanism = typename StoreMechanismOf<C>::type;

/// A consumer warpgroup: for each of its tiles, the ping-pong turn, the bias, the main loop
/// (Mainloop::mma_tile, drain, release), the split-K fix-up and the store.
/// Ping-pong: the warpgroups run their main loops in tile order, each starting once the other has
/// issued its previous tile's MMAs. That keeps one's epilogue under the other's main loop, and it
/// is what makes skipping safe: the stages skipped have all been waited for, so a stage this
/// warpgroup waits on is never a whole ring ahead of its barrier (the parity would alias).
/// With an op, a tile without k-blocks reads zeros in place of its accumulators (ctx.no_k; or its
/// bias, where they start from it): a second array of zeros would be live beside the accumulators
/// (which stay live into the next tile's MMAs) and spill. The op keeps the zero tail's rows zeros.
template <KernelConfig C>
__device__ __forceinline__ void consume(const GroupedGemmParams& p, SharedStorage<C>& s, int consumer, uint32_t rank) {
  constexpr int kAtoms = C.m_atoms();
  using ML = MainloopOf<C>;
  typename ML::Accumulators acc;  // this warpgroup's rows of the tile
  PipelineCursor<C.stages> cur;
  const bool release_lane = (threadIdx.x % 32) == 0;
  int nth = 0;       // tiles this CTA has walked
  int ring_pos = 0;  // the TMA epilogue's place in this warpgroup's ring of staging boxes
  for (Tiles<C, kConsumersDivideFast<C>> it(p.scheduler, p.split_k.k_splits, s.table()); it.valid();
       it.advance(), ++nth) {
    const TileCoord tc = cta_tile<C>(it.current(), rank);
    const int k_blocks = ML::k_blocks(tc);
    if constexpr (C.pingpong()) {
      if (nth % 2 != consumer) {  // the other warpgroup's tile
        cur.skip(k_blocks);
        continue;
      }
      // A bias is where the accumulators start (epilogue_op.cuh): loaded before the turn, under the
      // other warpgroup's main loop.
      if constexpr (C.op.bias)
        start_from_bias<C.op, C.tile_n, kAtoms>(acc, p, tc.col0, tc.group,
                                                tc.group >= p.scheduler.group_base + p.scheduler.groups);
      if (nth > 0) {  // the first tile of all has no predecessor
        // This warpgroup's own tiles are every other one, so its (nth / 2)-th wait (consumer 1) or
        // (nth / 2 - 1)-th (consumer 0) has that parity; computed, not carried, which saves the
        // 128x192 ping-pong kernel the register it spilled.
        ptx::mbarrier_wait(s.turn(consumer), static_cast<uint32_t>(((nth >> 1) + consumer + 1) & 1));
      }
    }
    // This warpgroup's rows of out and its first atom of the stages' A tiles.
    const int row0 = tc.row0 + cta_row_offset<C>(tc, rank) + (C.pingpong() ? 0 : C.warpgroup_rows() * consumer);
    const int a_atom0 = C.pingpong() ? 0 : kAtoms * consumer;
    // Atoms whose 64 rows all lie past the group's end (the last tile of a group, or the second
    // CTA of a cluster) have nothing to compute or store; a warpgroup without live atoms only keeps
    // the pipeline going. Uniform across the warpgroup.
    const int rows_left = tc.row_end - row0;
    const int live_atoms = rows_left <= 0 ? 0 : ((rows_left + 63) / 64 < kAtoms ? (rows_left + 63) / 64 : kAtoms);
    // A bias is where the accumulators start (epilogue_op.cuh; ping-pong: above): the first MMA adds
    // to it. Its loads are in flight while the warpgroup waits for the first stage (mma_tile).
    if constexpr (C.op.bias && !C.pingpong())
      start_from_bias<C.op, C.tile_n, kAtoms>(acc, p, tc.col0, tc.group,
                                              tc.group >= p.scheduler.group_base + p.scheduler.groups);
    ML::start_tile(acc, p, tc, row0);
    if constexpr (C.loads_h_by_tma()) {
      // The tile's first chunk of h (the activation's backward by TMA), loaded under its main loop
      // wherever the warpgroup stores the tile (the conditions after the main loop below): its
      // epilogue waits for it.
      bool stores = live_atoms > 0;
      if constexpr (C.cluster_n > 1 || C.pairs_last_unit()) stores = stores && tc.col0 < p.scheduler.n;
      if (stores && threadIdx.x % 128 == 0)
        StoreMechanism<C>::template load_h_chunk<C.op>(s.epi() + consumer * C.epilogue_warpgroup_bytes(),
                                                       s.h_load(consumer), p, tc.col0, row0);
    }
    ML::mma_tile(acc, s, tc, k_blocks, cur, a_atom0, live_atoms, consumer, release_lane);
    if constexpr (C.pingpong()) {  // the other warpgroup's turn: its next tile's stages are next
      // Every warp arrives, not one for the warpgroup: its warps are coupled only by the MMAs, so on
      // tiles without any (empty K ranges) a lagging warp would still be waiting for a turn that
      // the leading warps had already passed twice, and the parity of its wait would alias (hang).
      if (release_lane) ptx::mbarrier_arrive(s.turn(consumer ^ 1));
    }
    ML::drain(acc);
    // The tile's last stage, the one before the cursor, back to the producer.
    if (k_blocks > 0 && release_lane) ML::release(s, cur.stage == 0 ? C.stages - 1 : cur.stage - 1);
    if (live_atoms == 0) continue;
    if constexpr (C.cluster_n > 1 || C.pairs_last_unit()) {
      if (tc.col0 >= p.scheduler.n) continue;  // the unit's second tile lies past N
    }
    if constexpr (C.split_k) {  // only the tile's last unit stores
      if (p.split_k.k_splits > 1) {
        if (k_blocks == 0) {
          // A tile without K (the zero tail; every unit of a tile with K sums at least one k-block,
          // as the host splits at most k-blocks / 4 ways): no partials to add or wait for, and its
          // accumulators were never written. Split 0 stores the zeros, the others nothing.
          if (tc.split != 0) continue;
        } else if (!split_k_fixup<C, kAtoms>(acc, p.split_k, tc, split_k_slot<C>(tc, rank, consumer),
                                                  warpgroup_barrier(consumer))) {
          continue;
        }
      }
    }
    // Every store mechanism has the one signature: store<op>(accumulators, tile, staging, ring, params).
    // (Called through a lambda, as before ops: the identity's PTX stays byte for byte what it was.)
    TileContext ctx{row0, tc.row_end, tc.col0, tc.group, live_atoms, consumer, k_blocks == 0,
                    tc.group >= p.scheduler.group_base + p.scheduler.groups};
    if constexpr (C.loads_h_by_tma()) ctx.h_bar = s.h_load(consumer);
    auto store_tile = [&](auto& values) {
      StoreMechanism<C>::template store<C.op, C.tile_n, kAtoms, C.epilogue_ring()>(
          values, ctx, s.epi() + consumer * C.epilogue_warpgroup_bytes(), ring_pos, p);
    };
    if constexpr (C.op.identity()) {
      // An empty K range (K-grouped) or K = 0: no MMA wrote the accumulators, the tile is zeros,
      // stored from constants. (Zeroing the accumulators cost every tile 128 selects before its main
      // loop: ptxas predicated the rarely taken branch; ~5% of a short-K weight gradient's stall
      // samples. An inline-PTX branch instead made ptxas serialize wgmma, C7515.)
      if (k_blocks == 0) {
        float zeros[kAtoms][C.tile_n / 2] = {};
        store_tile(zeros);
      } else {
        store_tile(ML::result(acc));
      }
    } else {
      store_tile(ML::result(acc));  // (a tile without k-blocks: the op reads zeros, see above)
    }
  }
}

// ---------------------------------------------------------------- kernel
template <KernelConfig C>
__global__ void __launch_bounds__(C.threads(), 1) grouped_gemm_kernel(const __grid_constant__ GroupedGemmParams p) {
  static_assert(C.pingpong() || (C.tile_m % (64 * C.consumers) == 0 && C.m_atoms() <= 2),
                "cooperative: each consumer warpgroup owns 64 or 128 rows");
  // 192 fp32 accumulators a thread (128x192 a warpgroup) is the most that leaves the consumers
  // registers for addresses and the epilogue under their 232-240 (setmaxnreg).
  static_assert(C.m_atoms() * C.tile_n <= 2 * 192, "at most 192 fp32 accumulators a consumer thread");
  static_assert(!C.pingpong() || (C.consumers == 2 && C.tile_m % 64 == 0), "ping-pong: two warpgroups");
  static_assert(C.k_row_bytes() == 128 && C.tile_k == (C.ab == ElemType::e4m3 ? 128 : 64),
                "tile_k is one 128-byte swizzle row: 64 16-bit elements or 128 e4m3");
  static_assert(C.ab != ElemType::fp32, "fp32 inputs have no wgmma path here");
  static_assert(C.cluster_m == 1 || C.cluster_m == 2, "clusters of 1 or 2 CTAs along M");
  static_assert(C.cluster_n == 1 || (C.cluster_n == 2 && C.cluster_m == 1 && C.group_axis == GroupAxis::m &&
                                     !C.gathers() && !C.split_k),
                "clusters of 2 CTAs along N: M-grouped, A by TMA, no split-K, not with a cluster along M");
  static_assert(C.epilogue == 0 || C.out != ElemType::fp32, "the TMA epilogue stages 16-bit outputs");
  static_assert(C.a_major == AMajor::k || C.tile_m % 64 == 0, "M-major A loads whole 64-row atoms");
  static_assert(!C.split_k || C.group_axis == GroupAxis::m, "the K-grouped form never splits K");
  static_assert(C.op.identity() || C.group_axis == GroupAxis::m, "the K-grouped form takes no epilogue op");
  static_assert(C.epilogue == 0 || C.out_tile_n() % 64 == 0, "the TMA store writes 64-column boxes of out");
  static_assert(C.out_tile_n() % 32 == 0, "the direct store transposes 32 columns at a time");
  static_assert(!C.op.bias || C.op.bias_type == ElemType::fp32 || C.op.bias_type == C.out,
                "a bias is fp32 or out's type");
  static_assert(named_barriers<C>() <= 16, "a CTA has 16 named barriers");
  static_assert(!C.gather_a || (C.group_axis == GroupAxis::m ? C.a_major == AMajor::k : C.a_major == AMajor::m),
                "a gathered A: M-grouped rows of a K-major A, or K-grouped k-rows of an M-major A");
  static_assert(!C.out_m_major || (C.group_axis == GroupAxis::k && C.epilogue == 1 && C.op.identity()),
                "an M-major out: the K-grouped form's, stored by the TMA epilogue");
  static_assert(!C.gather_b || (C.group_axis == GroupAxis::k && C.b_major == BMajor::n && C.cluster_m == 1 &&
                                !C.op.split_b()),
                "a gathered B: K-grouped k-rows of an N-major B, without a cluster");
  extern __shared__ uint8_t smem_raw[];
  SharedStorage<C> s(smem_raw, table_groups(p.scheduler));

  // ---- setup: barriers and the scheduler table, by the whole CTA
  const int warpgroup = threadIdx.x / 128;
  if (threadIdx.x == 0) {
    if constexpr (!C.gather_a) ptx::prefetch_tensor_map(&p.mainloop.map_a);  // (a gathered operand has no map)
    if constexpr (!C.gather_b) ptx::prefetch_tensor_map(&p.mainloop.map_b);
    for (int i = 0; i < C.stages; ++i) {
      // The producer's arrival with B's bytes, and with a gathered A the 128 copying threads' (.noinc).
      ptx::mbarrier_init(s.full(i), C.gathers() ? 1 + 128 : 1);
      // Lane 0 of every consumer warp that reads the stage, in every CTA its multicasts reach.
      ptx::mbarrier_init(s.empty(i), (C.pingpong() ? 1 : C.consumers) * 4 * C.cluster_size());
    }
    ptx::mbarrier_init(s.turn(0), 4);  // lane 0 of each warp of the other warpgroup
    ptx::mbarrier_init(s.turn(1), 4);
    if constexpr (C.loads_h_by_tma())
      for (int i = 0; i < C.consumers; ++i) ptx::mbarrier_init(s.h_load(i), 1);  // thread 0 of warpgroup i
    ptx::fence_barrier_init();
  }
#ifdef GEMMOPS_PDL
  // (An A/B define; the host launches such a kernel with programmatic stream serialization.) The
  // barriers above are this CTA's shared memory: everything global, from the table's read of the
  // offsets on, waits for the kernels ahead on the stream to end, so this kernel's launch and setup
  // overlap their last tiles. The stream's next kernel may then start its own setup as this one's
  // CTAs leave their SMs (it waits for this grid's end before it reads anything).
  ptx::griddepcontrol_wait();
  ptx::griddepcontrol_launch_dependents();
#endif
  build_scheduler_table<C.unit_m(), C.unit_n(), C.group_axis, C.pairs_last_unit() ? C.tile_m : 0>(p.scheduler,
                                                                                                  s.table());
  __syncthreads();
  const uint32_t rank = C.cluster_size() > 1 ? ptx::cluster_ctarank() : 0;
  // The peer's barriers must be initialised before its multicasts or arrivals can reach them.
  if constexpr (C.cluster_size() > 1) ptx::cluster_sync();

  // ---- roles: warpgroup 0 produces (one warp issues TMA), the others consume
  // setmaxnreg moves registers only within what the CTA was given at launch (its threads times the
  // per-thread count the launch bounds allow, 168 at 384 threads): a warp whose increase the
  // decreases do not cover waits in setmaxnreg forever. 192 accumulators a thread (128x192 a
  // warpgroup) need the consumers at 240, so the producer keeps 24: 24 + 2 * 240 = 3 * 168
  // (32 + 2 * 240 was 1024 registers short and hung every launch; FlashAttention-3 splits 24/240 too).
  // A gathered A's producer (128 threads holding a tile's row indices beside the scheduler's state,
  // and issuing copies) takes 72, so two consumer warpgroups drop to 216 (72 + 2 * 216 = 3 * 168):
  // at 56 / 224 the producers of the 2-CTA cooperative kernels spilled 4-28 bytes, at 72 / 216
  // nothing spills but the 256-row tiles' (which refuse a gathered A). Wide accumulators cannot pay.
  constexpr bool kWideAccumulators = C.wide_accumulators();
  static_assert(!C.gathers() || !kWideAccumulators,
                "a gathered operand needs producer registers wide consumers cannot give");
  constexpr int kProducerRegisters = C.gathers() ? 72 : kWideAccumulators ? 24 : 40;
  constexpr int kConsumerRegisters = C.consumers == 1 || kWideAccumulators ? 240 : C.gathers() ? 216 : 232;
  constexpr int kLaunchRegisters = (65536 / C.threads() < 255 ? 65536 / C.threads() : 255) / 8 * 8;
  static_assert(kProducerRegisters + C.consumers * kConsumerRegisters <= (C.consumers + 1) * kLaunchRegisters,
                "setmaxnreg: the warpgroups' registers must fit what the CTA was given at launch");
  if (warpgroup == 0) {
    ptx::setmaxnreg_dec<kProducerRegisters>();
    if constexpr (C.gathers()) {
      produce<C>(p, s, rank, static_cast<int>(threadIdx.x));
    } else {
      if (threadIdx.x / 32 == 0 && ptx::elect_one()) produce<C>(p, s, rank, 0);
      __syncwarp();
    }
  } else {
    ptx::setmaxnreg_inc<kConsumerRegisters>();
    // The consumer's index read through a shuffle from lane 0: ptxas then knows it is warp-uniform,
    // so the addresses derived from it (its A atoms, staging and barriers) and the wgmma descriptors
    // built from them stay in uniform registers (from a per-thread index they are moved over by R2UR
    // before every wgmma), and the direct store's shuffles need no divergent fallback (half the code
    // of the direct-store kernels). Measured on an H100 (bench/NOTES.md v31): the weight gradients
    // 1.02-1.04x, Mixtral's dgated piece 1.03x, the rest level. The producer's index is left as it is
    // (shuffled there too, the 2-CTA fp8 kernel spilled 4 bytes), and so are the activation
    // backward's with two atoms a warpgroup and the TMA store's backward (shuffled, the 128x128
    // ping-pong's clamped-SwiGLU backward spilled 24 bytes, the 3-stage 128x256 2-CTA TMA one 16).
    if constexpr (C.loads_h_by_tma() || (C.op.activation_grad && C.m_atoms() > 1))
      consume<C>(p, s, warpgroup - 1, rank);
    else
      consume<C>(p, s, __shfl_sync(0xffffffffu, warpgroup - 1, 0), rank);
    if constexpr (C.epilogue == 1) TmaStoreEpilogue<C.out>::finish();
  }
  // No CTA may leave while a peer can still multicast into its shared memory or arrive on its barriers.
  if constexpr (C.cluster_size() > 1) ptx::cluster_sync();
}

}  // namespace gemmops::kernels::sm90
