// src/sm90/heuristics.cpp: waves of tiles against compute, bytes against bandwidth
// SPDX-License-Identifier: Apache-2.0
#include "sm90/heuristics.hpp"

#include <algorithm>
#include <cmath>

namespace gemmops::sm90 {
namespace {

constexpr double kSms = 132;
constexpr double kPeakFlops = 784e12;   // dense bf16 measured on an H200
constexpr double kBandwidth = 4.0e12;   // DRAM bytes/s, copy bandwidth measured there
constexpr double kL2Bandwidth = 13.9e12;  // bytes/s into shared memory when tiles re-read from L2 (fitted)
constexpr double kLaunchUs = 10.0;       // launch, scheduler table and pipeline fill (fitted)
// What a direct (register) store of a tile costs the main loop, as a bandwidth per SM share (fitted).
constexpr double kStoreBandwidth = 2.3e12;
constexpr double kTmaStoreShare = 0.33;  // the part of that cost the TMA epilogue does not overlap
constexpr double kSplitKMemsetUs = 2.0;  // clearing the split-K flags before the launch
constexpr double kSplitKMinGain = 0.9;   // a split must promise to save 10%

// The constants above marked fitted and each design's Calibration (designs.cpp) are fitted to a
// sweep that timed every design on the 80 MoE shapes of the shared moe_shapes.csv, forward and
// weight gradient (H200, uniform tokens; bench/bench_grouped.py --sweep): with them the first
// operator is on average within 0.7% of the fastest (1-2% on shapes held out of the fit), against
// 2.7% for the constants before. bench/NOTES.md v7 has the run.

}  // namespace

int max_split_k(const KernelProblem& p) {
  if (p.kind == OperationKind::grouped_k) return 1;
  const int64_t k_blocks = (p.k + 63) / 64;
  return static_cast<int>(std::clamp<int64_t>(k_blocks / kMinSplitKBlocks, 1, kMaxSplitK));
}

double estimate_time_us(const KernelProblem& p, const Sm90Design& d) { return choose_split_k(p, d).us; }

SplitKChoice choose_split_k(const KernelProblem& p, const Sm90Design& d) {
  SplitKChoice best{1, estimate_time_us(p, d, 1)};
  const double unsplit = best.us;
  for (int s = 2; s <= max_split_k(p); ++s) {
    const double us = estimate_time_us(p, d, s);
    if (us < best.us && us < kSplitKMinGain * unsplit) best = {s, us};
  }
  return best;
}

double estimate_time_us(const KernelProblem& p, const Sm90Design& d, int splits) {
  const Design& t = d.design;
  const Calibration& cal = d.calibration;
  const bool k_grouped = p.kind == OperationKind::grouped_k;
  // M-grouped: at most `rows` groups have rows, each owning rows / groups of them (sizes are on
  // the device). K-grouped: each group owns a (rows, N) result and K / G.
  const double groups = k_grouped ? std::max<double>(1, double(p.groups))
                                  : std::max<double>(1, std::min<double>(double(p.groups), double(p.rows)));
  const double rows_per_group = k_grouped ? double(p.rows) : double(p.rows) / groups;
  const double k_per_tile = k_grouped ? double(p.k) / groups : double(p.k);
  // Clusters take whole units of cluster_m tiles of one group: odd tile counts waste a tile.
  const double unit_m = double(t.tile_m) * t.cluster_m;
  const double m_units_per_group = std::ceil(rows_per_group / unit_m);
  const double m_tiles = groups * m_units_per_group * t.cluster_m;
  const double n_tiles = std::ceil(double(p.n) / t.tile_n);
  // Split-K: each tile is `splits` units over 1/splits of K; the last adds the others' fp32 partials.
  const double waves = std::ceil(m_tiles * n_tiles * splits / (std::floor(kSms / t.cluster_m) * t.cluster_m));
  // A K-grouped group's last k-block is partial, but costs a whole one.
  const double k_blocks = k_grouped ? std::ceil(k_per_tile / t.tile_k) + 0.5 : std::ceil(k_per_tile / t.tile_k / splits);
  const double tile_us =
      2.0 * t.tile_m * t.tile_n * k_blocks * t.tile_k / (kPeakFlops / kSms * cal.mainloop_efficiency) * 1e6;
  // Storing a tile from registers stalls the main loop for its bytes; the TMA epilogue overlaps
  // most of that with the next tile. A split unit writes (or the last one reads) fp32 partials.
  const double out_esize = double(size_of(p.out->dtype));
  const double store_us = double(t.tile_m) * t.tile_n * out_esize / (kStoreBandwidth / kSms) * 1e6;
  const double partial_us =
      splits > 1 ? double(t.tile_m) * t.tile_n * 4.0 * (splits - 1) / (kStoreBandwidth / kSms) * 1e6 : 0.0;
  const double epilogue_us = (t.epilogue == Epilogue::tma_store ? kTmaStoreShare * store_us : store_us) + partial_us;
  // Ping-pong hides every epilogue but the CTA's last under the other warpgroup's main loop.
  const double compute_us = t.schedule == Schedule::pingpong
                                ? waves * (tile_us + cal.tile_overhead_us) + epilogue_us
                                : waves * (tile_us + epilogue_us + cal.tile_overhead_us);
  // DRAM: every operand once (the raster keeps a group's B in L2 while its M tiles pass). L2: A once
  // per N tile, B once per M unit (a cluster's multicast serves all its CTAs), out once.
  const double esize = 2.0;
  const double a_bytes = double(p.rows) * double(p.k) * esize;
  const double b_bytes = double(p.k) * double(p.n) * esize * (k_grouped ? 1.0 : groups);
  const double out_bytes = double(p.out_rows) * double(p.n) * out_esize;
  const double dram_us = (a_bytes + b_bytes + out_bytes) / (kBandwidth * cal.bandwidth_efficiency) * 1e6;
  const double b_tile_reads = double(p.k) * double(p.n) * esize * (k_grouped ? m_units_per_group : m_tiles / t.cluster_m);
  const double l2_us = (a_bytes * n_tiles + b_tile_reads + out_bytes) / kL2Bandwidth * 1e6;
  return kLaunchUs + (splits > 1 ? kSplitKMemsetUs : 0.0) + std::max({compute_us, dram_us, l2_us});
}

}  // namespace gemmops::sm90
