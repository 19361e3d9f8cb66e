// src/sm90/machine_model.hpp: the machine the Hopper estimate (heuristics.cpp) models, one named struct per part
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string_view>

namespace gemmops::sm90 {

/// How the rows (K-grouped: the K) of a grouped problem are assumed to fall into its groups.
enum class GroupSizes {
  even,    // spread evenly, exactly (distributions.md D0)
  skewed,  // Zipf (exponent 1.2) over three quarters of the groups, the rest empty (D3)
  routed,  // even on average, each M-grouped group's count off by routing's noise (D1: sd sqrt(rows a group))
};

/// Rates and costs of one target part. Fields marked fitted were fitted together with each design's
/// Calibration (designs.cpp) to an H200 sweep of every design on the 80 MoE shapes (bench/NOTES.md
/// v7, v11); the others were measured there or come from the part (machine_models.cpp says which).
struct MachineModel {
  std::string_view name;          ///< "h200": what GEMMOPS_MACHINE_MODEL and a target's ":h200" name
  std::string_view calibrations;  ///< whose per-design calibrations it uses (calibrations.cpp)
  // The part as the driver describes it: machine_model_for() tells parts apart by these.
  double boost_clock_hz;          ///< CU_DEVICE_ATTRIBUTE_CLOCK_RATE
  double spec_dram_bandwidth;     ///< bytes/s: memory clock x 2 x bus width, the datasheet's rate
  double l2_bytes;                ///< not read by the estimate (yet): told apart by, and printed
  // What the estimate reads.
  double sms;                      ///< streaming multiprocessors
  double peak_flops;               ///< dense 16-bit FLOP/s the main loop can reach
  double dram_bandwidth;           ///< bytes/s, copy bandwidth
  double l2_bandwidth;             ///< bytes/s into shared memory when tiles re-read from L2 (fitted)
  double launch_us;                ///< launch, scheduler table and pipeline fill (fitted)
  double store_bandwidth;          ///< a direct store's cost to the main loop, bytes/s over all SMs (fitted)
  double tma_store_share;          ///< the part of that cost the TMA epilogue does not overlap
  double split_k_memset_us;        ///< clearing the split-K flags before the launch
  double load_latency_us;          ///< a stage's load latency from L2 (fitted)
  double dram_miss_latency_us;     ///< added when every load misses L2 (fitted)
  /// A K-major operand whose rows start 16 bytes off a 32-byte sector streams its tiles this much
  /// slower (fitted on gpt-oss-120b TP8 down at K = 352, 360, 368, 384; bench/NOTES.md v11).
  double misaligned_row_l2_cost;
  /// A's rows gathered through an index (the M-grouped gathered A: 16-byte cp.async copies by the
  /// producer warpgroup, Hopper's TMA having no row gather) stream from L2 this much slower than
  /// TMA's boxes. 1 on the H200 (its pick and the 2-CTA twin tied); the H100's from its step pieces.
  double gathered_row_l2_cost;
  /// The balanced half of the ranking's two assumptions about group sizes (the other is skewed):
  /// `even` (exact; every part today) or `routed` (routing's noise: each group's partial last tile).
  /// A fit on a sweep with routed rows (bench_grouped.py --dists routed) says which ranks better
  /// (gemmops_fit_calibration --balanced routed).
  GroupSizes balanced_sizes = GroupSizes::even;
};

/// An H200 (SXM, 700 W): the model every estimate used before there were several, and still the
/// default where discovery knows no device and is told no other (so CI's rankings stay as they were).
inline constexpr MachineModel kH200{
    .name = "h200",
    .calibrations = "h200",
    .boost_clock_hz = 1.98e9,
    .spec_dram_bandwidth = 4.8e12,
    .l2_bytes = 50.0 * 1024 * 1024,
    .sms = 132,
    .peak_flops = 784e12,
    .dram_bandwidth = 4.0e12,
    .l2_bandwidth = 13.9e12,
    .launch_us = 10.0,
    .store_bandwidth = 2.3e12,
    .tma_store_share = 0.33,
    .split_k_memset_us = 2.0,
    .load_latency_us = 1.2,
    .dram_miss_latency_us = 2.0,
    .misaligned_row_l2_cost = 2.8,
    .gathered_row_l2_cost = 1.0,
};

}  // namespace gemmops::sm90
