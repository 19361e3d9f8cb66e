// src/sm90/designs.cpp: the table of registered Hopper designs
// SPDX-License-Identifier: Apache-2.0
#include "sm90/designs.hpp"

namespace gemmops::sm90 {
namespace {

constexpr Design tile(int m, int n, int stages, Schedule s, int cluster_m = 1, Epilogue e = Epilogue::store,
                      int epilogue_boxes = 0) {
  return Design{.tile_m = m, .tile_n = n, .tile_k = 64, .cluster_m = cluster_m, .cluster_n = 1, .stages = stages,
                .schedule = s, .epilogue = e, .epilogue_boxes = epilogue_boxes};
}

// Two CTAs along N sharing A (kernels/sm90/config.cuh's cluster_n).
constexpr Design tile_pair_along_n(int m, int n, int stages, Schedule s, Epilogue e = Epilogue::store,
                                   int epilogue_boxes = 0) {
  Design d = tile(m, n, stages, s, 1, e, epilogue_boxes);
  d.cluster_n = 2;
  return d;
}

// Stages fill the ~227 KiB of shared memory a Hopper block may use, leaving room for the
// scheduler's per-group table (12 bytes a group). The calibrations ({main-loop efficiency,
// bandwidth efficiency, per-tile overhead us, K-grouped time scale}) are fitted to an H200 sweep of
// every design on the 80 MoE shapes, forward and weight gradient (bench/NOTES.md v7). The
// K-grouped scales (default 1) were fitted on the pick loss of v10's weight-gradient sweep (160
// rows, uniform and Zipf), after the K-grouped walk and partial-block changes: 1.023 -> 1.003 off
// the fastest design, and better on every held-out half tried (bench/NOTES.md v10).
const Sm90Design kDesigns[] = {
    // Large problems: B multicast to 2 CTAs halves its L2 traffic.
    {.design = tile(128, 256, 4, Schedule::cooperative, 2),
     .consumers = 2,
     .calibration = {.mainloop_efficiency = 0.93, .bandwidth_efficiency = 0.80,
                     .tile_overhead_us = 0.0, .k_grouped_time_scale = 1.04}},
    {.design = tile(128, 128, 6, Schedule::cooperative, 2),
     .consumers = 2,
     .calibration = {.mainloop_efficiency = 0.82, .bandwidth_efficiency = 0.70,
                     .tile_overhead_us = 0.0}},
    // Short K (down projections): the TMA epilogue overlaps the stores with the next tile, at the
    // price of one stage of shared memory for the staging slabs (16-bit outputs only).
    {.design = tile(128, 256, 3, Schedule::cooperative, 2, Epilogue::tma_store),
     .consumers = 2,
     .calibration = {.mainloop_efficiency = 0.89, .bandwidth_efficiency = 0.73,
                     .tile_overhead_us = 0.5}},
    // CUTLASS's choice for torch._grouped_mm: four stages and a staging ring of two boxes per
    // warpgroup (a quarter of the tile), so the stores still overlap the next tile.
    {.design = tile(128, 256, 4, Schedule::cooperative, 2, Epilogue::tma_store, 2),
     .consumers = 2,
     .calibration = {.mainloop_efficiency = 0.96, .bandwidth_efficiency = 0.75,
                     .tile_overhead_us = 0.3, .k_grouped_time_scale = 1.04}},
    {.design = tile(128, 256, 4, Schedule::cooperative, 1, Epilogue::tma_store, 2),
     .consumers = 2,
     .calibration = {.mainloop_efficiency = 0.95, .bandwidth_efficiency = 0.85,
                     .tile_overhead_us = 0.3, .k_grouped_time_scale = 1.04}},
    // (Refitted on a weight-gradient sweep: its per-tile cost made it the pick for gpt-oss decode
    // weight gradients, 27% slower than 128x256; bench/NOTES.md v8.)
    {.design = tile(128, 128, 5, Schedule::cooperative, 2, Epilogue::tma_store),
     .consumers = 2,
     .calibration = {.mainloop_efficiency = 0.86, .bandwidth_efficiency = 0.65,
                     .tile_overhead_us = 0.5, .k_grouped_time_scale = 1.04}},
    // (Three tiles of TMA staging with three stages, for store-bound weight gradients, measured
    // 7-40% slower than this design on all 26 decode-sized ones: bench/NOTES.md v8.)
    // Most FLOPs per byte of smem.
    {.design = tile(128, 256, 4, Schedule::cooperative),
     .consumers = 2,
     .calibration = {.mainloop_efficiency = 0.95, .bandwidth_efficiency = 0.95,
                     .tile_overhead_us = 0.0, .k_grouped_time_scale = 1.04}},
    // Mid-size N, more tiles.
    {.design = tile(128, 128, 6, Schedule::cooperative),
     .consumers = 2,
     .calibration = {.mainloop_efficiency = 0.84, .bandwidth_efficiency = 0.85,
                     .tile_overhead_us = 0.0}},
    // Ping-pong: each of the two warpgroups owns a whole tile and they take the CTA's tiles in
    // turn, so one's epilogue (and its wait for the next tile's first stage) runs under the
    // other's main loop.
    {.design = tile(128, 128, 6, Schedule::pingpong),
     .consumers = 2,
     .calibration = {.mainloop_efficiency = 0.95, .bandwidth_efficiency = 0.85,
                     .tile_overhead_us = 1.8, .k_grouped_time_scale = 1.08}},
    // (128x128 ping-pong with 2-CTA clusters: no longer hangs since the v9 turn fix, but the
    // fastest design on 2 of 160 forward rows, by under 2%, and on none of 160 weight-gradient rows;
    // 26% slower than the best design on average: bench/NOTES.md v11. Registered again below as a
    // trial for the gathered forms.)
    // 64-row tiles waste least of a group's last tile.
    {.design = tile(64, 256, 5, Schedule::pingpong),
     .consumers = 2,
     .calibration = {.mainloop_efficiency = 0.97, .bandwidth_efficiency = 1.05,
                     .tile_overhead_us = 2.0, .k_grouped_time_scale = 1.08}},
    {.design = tile(64, 256, 5, Schedule::pingpong, 2),
     .consumers = 2,
     .calibration = {.mainloop_efficiency = 0.94, .bandwidth_efficiency = 1.00,
                     .tile_overhead_us = 2.0, .k_grouped_time_scale = 1.04}},
    {.design = tile(128, 128, 4, Schedule::pingpong, 1, Epilogue::tma_store),
     .consumers = 2,
     .calibration = {.mainloop_efficiency = 0.78, .bandwidth_efficiency = 0.68,
                     .tile_overhead_us = 0.6, .k_grouped_time_scale = 1.12}},
    // Trial designs (Sm90Design::trial): compiled and tested, not yet timed on a GPU, so ranked
    // after every timed design until a sweep fits their calibrations (bench/NOTES.md v16).
    // 192-wide tiles (QuACK's pick for the seed problem): 2048 columns are 11 tiles, and 128-row
    // tiles of the seed's 683-row groups make 792 tiles, 6 per SM on 132 SMs where 128x256 makes
    // 4.4 waves. Ping-pong (QuACK's own pick): a warpgroup holds 128x192 fp32 accumulators, 192
    // registers a thread, so no split-K twin, and spill-free only since the shared storage keeps
    // 32-bit addresses. (Its 2-CTA twin still spills 4 bytes with A M-major and B N-major; not
    // registered.)
    {.design = tile(128, 192, 5, Schedule::pingpong),
     .consumers = 2,
     .calibration = {.mainloop_efficiency = 0.90, .bandwidth_efficiency = 0.85,
                     .tile_overhead_us = 1.8, .k_grouped_time_scale = 1.08},
     .trial = true},
    // Cooperative, 64 rows a warpgroup: 96 accumulators a thread.
    {.design = tile(128, 192, 5, Schedule::cooperative, 2),
     .consumers = 2,
     .calibration = {.mainloop_efficiency = 0.90, .bandwidth_efficiency = 0.85,
                     .tile_overhead_us = 0.0, .k_grouped_time_scale = 1.04},
     .trial = true},
    {.design = tile(128, 192, 4, Schedule::cooperative, 2, Epilogue::tma_store, 2),
     .consumers = 2,
     .calibration = {.mainloop_efficiency = 0.90, .bandwidth_efficiency = 0.85,
                     .tile_overhead_us = 0.3, .k_grouped_time_scale = 1.04},
     .trial = true},
    {.design = tile(128, 192, 4, Schedule::cooperative, 1, Epilogue::tma_store, 2),
     .consumers = 2,
     .calibration = {.mainloop_efficiency = 0.90, .bandwidth_efficiency = 0.85,
                     .tile_overhead_us = 0.3, .k_grouped_time_scale = 1.04},
     .trial = true},
    // 128x128 ping-pong with 2-CTA clusters, back as a trial for the MoE step's gathered forms: with
    // A's rows gathered by the producer's copies, B's multicast halves the L2 reads that compete with
    // them (the 2-CTA twin of 64x256 ping-pong ran the up projection 18% faster than the 1-CTA pick on
    // an H100), and SonicMoE's dgated runs a 2-CTA ping-pong (128x160). On plain forward rows it was
    // the fastest on 2 of 160 (bench/NOTES.md v11).
    {.design = tile(128, 128, 6, Schedule::pingpong, 2),
     .consumers = 2,
     .calibration = {.mainloop_efficiency = 0.95, .bandwidth_efficiency = 0.85,
                     .tile_overhead_us = 1.8, .k_grouped_time_scale = 1.08},
     .trial = true},
    // 256-row cooperative tiles, 128 rows a warpgroup: half the B traffic per FLOP of 128-row ones.
    {.design = tile(256, 128, 4, Schedule::cooperative, 2),
     .consumers = 2,
     .calibration = {.mainloop_efficiency = 0.90, .bandwidth_efficiency = 0.85,
                     .tile_overhead_us = 0.0, .k_grouped_time_scale = 1.04},
     .trial = true},
    // 192x128 ping-pong (issue 31: QuACK's pick for the seed problem on the H100, 61 us against our
    // 65): three 64-row atoms a warpgroup, 192 accumulators a thread as in 128x192, so no K-grouped
    // form and no activation's backward (it spilled ~3 KB); 683-row groups are 4 tiles of 192 (3.6
    // filled) where 128-row tiles make 6 (5.3).
    {.design = tile(192, 128, 5, Schedule::pingpong),
     .consumers = 2,
     .calibration = {.mainloop_efficiency = 0.90, .bandwidth_efficiency = 0.85,
                     .tile_overhead_us = 1.8, .k_grouped_time_scale = 1.08},
     .trial = true},
    // Clusters along N (QuACK's (1, 2)): the two CTAs share A's tile by multicast and take adjacent
    // column tiles, so a scheduler unit stays 128 rows high. Routed groups end in a partial unit
    // about half the time, and its cost grows with the unit's height (bench/NOTES.md v26): these
    // are for the MoE step's pieces whose A is read by TMA (down projection, up projection's dgrad).
    {.design = tile_pair_along_n(128, 256, 4, Schedule::cooperative),
     .consumers = 2,
     .calibration = {.mainloop_efficiency = 0.93, .bandwidth_efficiency = 0.80,
                     .tile_overhead_us = 0.0},
     .trial = true},
    {.design = tile_pair_along_n(128, 256, 4, Schedule::cooperative, Epilogue::tma_store, 2),
     .consumers = 2,
     .calibration = {.mainloop_efficiency = 0.96, .bandwidth_efficiency = 0.75,
                     .tile_overhead_us = 0.3},
     .trial = true},
    {.design = tile_pair_along_n(128, 128, 6, Schedule::pingpong),
     .consumers = 2,
     .calibration = {.mainloop_efficiency = 0.95, .bandwidth_efficiency = 0.85,
                     .tile_overhead_us = 1.8},
     .trial = true},
    // (128x192 ping-pong along N spilled 4 bytes with B N-major, as its twin along M does.)
    // Decode: groups of a few rows, weight-bandwidth bound.
    {.design = tile(64, 128, 8, Schedule::small_m),
     .consumers = 1,
     .calibration = {.mainloop_efficiency = 0.64, .bandwidth_efficiency = 0.95,
                     .tile_overhead_us = 0.5}},
    // Decode with wide N: fewer, longer weight streams.
    {.design = tile(64, 256, 5, Schedule::small_m),
     .consumers = 1,
     .calibration = {.mainloop_efficiency = 0.86, .bandwidth_efficiency = 1.05,
                     .tile_overhead_us = 1.5}},
};

// An fp8 design (the fp8 main loop, kernels/sm90/mainloop_fp8.cuh): 128-K blocks (one 128-byte swizzle row of e4m3 a stage), two consumer warpgroups
// of 64 rows; the calibration is the bf16 128x128's, a guess (the estimate ranks fp8 designs only
// against each other and the CPU operators).
constexpr Sm90Design fp8_tile(int n, int cluster_m, int stages, Epilogue e = Epilogue::store, bool trial = true) {
  return {.design = Design{.tile_m = 128, .tile_n = n, .tile_k = 128, .cluster_m = cluster_m, .cluster_n = 1,
                           .stages = stages, .schedule = Schedule::cooperative, .epilogue = e},
          .consumers = 2,
          .calibration = {.mainloop_efficiency = 0.84, .bandwidth_efficiency = 0.85, .tile_overhead_us = 0.0},
          .trial = trial};
}

const Sm90Design kFp8Designs[] = {
    // 128x128 with the TMA epilogue (a staging tile of 32 KiB beside the 5 stages, 197 KiB): the
    // direct store leaves the tensor cores idle ~1 us a tile while both warpgroups store, 13% of a
    // K = 2048 problem (DeepGEMM stages through shared memory and overlaps the next tile). The
    // fastest fp8 design on every row bench_fp8 timed on an H100 (2026-12-07, fifth session: 3-10%
    // ahead of the direct store, the 2-CTA twins and the 192-wide tiles), after the GPU suite and
    // memcheck passed: offered, and ranked first (its epilogue's share of the estimate).
    fp8_tile(128, 1, 5, Epilogue::tma_store, /*trial=*/false),
    // 128x128 with the direct store: a consumer thread holds two block sets of 64 accumulators and
    // the promoted sum, and one 128-column tile is one 128x128 B scale block. 5 stages of 32 KiB.
    // Passed the GPU suite and memcheck on an H100 (2026-12-06, its two-set loop on 2026-12-07).
    fp8_tile(128, 1, 5, Epilogue::store, /*trial=*/false),
    // Over a 2-CTA cluster, B multicast (the 16-bit kernels' load_b and cluster release): half the B
    // tiles' L2 reads. Block scales only: with rowwise ones it spills 4 bytes (plan.cpp refuses
    // them). Passed the GPU suite; slower than the 1-CTA TMA design on every timed row: a trial.
    // (Its TMA-epilogue twin was slower on every row of two H100 sessions, 0.3-5%, and with the
    // ragged store's coordinates it spilled 4 bytes: dropped, 2026-12-07.)
    fp8_tile(128, 2, 5),
    // 128x192 (DeepGEMM's tile where N allows it; it reaches ~1400 TFLOP/s where our 128x128 reaches
    // ~1000): 64 x 192 a warpgroup, one block set of 96 beside the promoted sum (three sets would
    // not fit), the two warpgroups interleaving their MMAs; a tile straddles two B scale blocks.
    // Stages of 40 KiB: 5 with the direct store (201 KiB), 4 beside the TMA epilogue's whole-tile
    // staging of 48 KiB (209 KiB). Passed the GPU suite; on the H100 4-12% slower than 128x128
    // with the TMA epilogue (one block set: each block waited for before the next is issued): trials.
    fp8_tile(192, 1, 5),
    fp8_tile(192, 2, 5),
    fp8_tile(192, 1, 4, Epilogue::tma_store),
    fp8_tile(192, 2, 4, Epilogue::tma_store),
};

}  // namespace

std::span<const Sm90Design> sm90_designs() { return kDesigns; }
std::span<const Sm90Design> sm90_fp8_designs() { return kFp8Designs; }

}  // namespace gemmops::sm90
