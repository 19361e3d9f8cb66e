// src/sm90/designs.hpp: the registered Hopper designs (tile, stages, consumer warpgroups, schedule)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <span>

#include "gemmops/metadata.hpp"

namespace gemmops::sm90 {

/// What the run-time estimate (heuristics.cpp) cannot derive from the design's shape: measured,
/// fitted per design to a sweep that timed every design on the MoE shapes (bench/NOTES.md v7).
struct Calibration {
  double mainloop_efficiency = 0.8;   ///< fraction of peak FLOP/s the main loop sustains
  double bandwidth_efficiency = 1.0;  ///< fraction of DRAM bandwidth the loads reach when bytes bind
  double tile_overhead_us = 0.0;      ///< per tile and wave: scheduling, pipeline fill, barrier waits
  double k_grouped_time_scale = 1.0;  ///< K-grouped (weight-gradient) estimates are multiplied by this
};

/// One kernel design: what metadata says (Design) plus what only the kernel needs.
struct Sm90Design {
  Design design;
  int consumers;  ///< consumer warpgroups; cooperative: each owns design.tile_m / consumers rows (64 or 128)
  Calibration calibration{};
  /// Not yet timed on a GPU: its calibration is a guess, so discovery ranks it after every timed
  /// design (kTrialPenaltyUs on its estimate) until a sweep fits one; autotune still times it.
  bool trial = false;
};

/// Added to a trial design's estimate: more than any other operator's estimate of a real problem
/// (the portable one's included), so trial designs rank last.
inline constexpr double kTrialPenaltyUs = 1e9;

/// Every registered design of 16-bit operands. Adding a design is one line in designs.cpp.
std::span<const Sm90Design> sm90_designs();

/// The designs of the fp8 main loop (e4m3 A and B, tile_k 128: one 128-byte row of e4m3), all
/// trial until they pass the GPU suite (registered by provider.cpp for e4m3 -> bf16).
std::span<const Sm90Design> sm90_fp8_designs();

}  // namespace gemmops::sm90
