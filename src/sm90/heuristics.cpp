// src/sm90/heuristics.cpp: waves of tiles against compute, bytes against bandwidth
// SPDX-License-Identifier: Apache-2.0
#include "sm90/heuristics.hpp"

#include <algorithm>
#include <cmath>

namespace gemmops::sm90 {
namespace {

constexpr double kSms = 132;
constexpr double kPeakFlops = 784e12;     // dense bf16 measured on an H200
constexpr double kBandwidth = 4.0e12;     // bytes/s, copy bandwidth measured there
constexpr double kLaunchUs = 4.0;
// What a direct (register) store of a tile costs the main loop, as a bandwidth per SM share.
constexpr double kStoreBandwidth = 4.0e12;
constexpr double kTmaStoreShare = 0.25;  // the part of that cost the TMA epilogue does not overlap

// The constants below are fitted to a sweep that timed every candidate operator on the 80 MoE
// shapes of the shared moe_shapes.csv (uniform tokens, H200; bench/bench_grouped.py --sweep): with
// them the first operator is on average within 1.4% of the fastest (fitted on half the shapes,
// 2-3% on the other half), against 6% for the hand-set model before. bench/NOTES.md has the run.

// Fraction of peak a design sustains in its main loop, all its overheads folded in.
double mainloop_efficiency(const Design& d) {
  if (d.schedule == Schedule::pingpong) return d.cluster_m > 1 ? 0.8 : 0.8;
  if (d.tile_m < 128) return 0.6;  // one consumer warpgroup: decode shapes, weight-bandwidth bound
  if (d.tile_n < 256) return d.cluster_m > 1 ? 0.5 : 0.75;  // 128x128 with clusters lost everywhere
  if (d.cluster_m > 1) return d.epilogue == Epilogue::tma_store ? 0.85 : 0.88;
  return 0.85;
}

// Fraction of the copy bandwidth a design's loads reach when the problem is bound by its bytes.
double bandwidth_efficiency(const Design& d) {
  if (d.tile_m < 128 && d.tile_n < 256) return 1.05;  // most tiles in flight: the most weight streams
  if (d.tile_n >= 256 && d.cluster_m > 1 && d.epilogue == Epilogue::store) return 0.9;
  return 1.0;
}

}  // namespace

double estimate_time_us(const KernelProblem& p, const Sm90Design& d) {
  const Design& t = d.design;
  const double groups = std::max<double>(1, double(p.groups));
  const bool k_grouped = p.kind == OperationKind::grouped_k;
  // M-grouped: each group owns its rows; K-grouped: each group owns a (rows, N) result and K / G.
  const double rows_per_group = k_grouped ? double(p.rows) : double(p.rows) / groups;
  const double k_per_tile = k_grouped ? double(p.k) / groups : double(p.k);
  // Clusters take whole units of cluster_m tiles of one group: odd tile counts waste a tile.
  const double unit_m = double(t.tile_m) * t.cluster_m;
  const double m_tiles = groups * std::ceil(rows_per_group / unit_m) * t.cluster_m;
  const double n_tiles = std::ceil(double(p.n) / t.tile_n);
  const double tiles = m_tiles * n_tiles;
  const double waves = std::ceil(tiles / (std::floor(kSms / t.cluster_m) * t.cluster_m));
  // A K-grouped group's last k-block is partial, but costs a whole one.
  const double k_blocks = k_grouped ? std::ceil(k_per_tile / t.tile_k) + 0.5 : std::ceil(k_per_tile / t.tile_k);
  const double tile_us =
      2.0 * t.tile_m * t.tile_n * k_blocks * t.tile_k / (kPeakFlops / kSms * mainloop_efficiency(t)) * 1e6;
  // Storing a tile from registers stalls the main loop for its bytes; the TMA epilogue overlaps
  // most of that with the next tile.
  const double out_esize = double(size_of(p.out->dtype));
  const double store_us = double(t.tile_m) * t.tile_n * out_esize / (kStoreBandwidth / kSms) * 1e6;
  const double epilogue_us = t.epilogue == Epilogue::tma_store ? kTmaStoreShare * store_us : store_us;
  // Ping-pong hides every epilogue but the CTA's last under the other warpgroup's main loop.
  const double compute_us = t.schedule == Schedule::pingpong ? waves * tile_us + epilogue_us
                                                             : waves * (tile_us + epilogue_us);
  // M-grouped: each group's B is read once per M unit of the group, A once (mostly from L2).
  // K-grouped: A and B are read once per N tile and M unit of their group respectively.
  const double esize = 2.0;
  const double out_rows = double(p.out_rows);
  const double b_bytes = k_grouped ? double(p.k) * double(p.n) * esize * std::ceil(rows_per_group / unit_m)
                                   : double(p.k) * double(p.n) * esize * m_tiles / t.cluster_m;
  const double a_bytes = double(p.rows) * double(p.k) * esize;
  const double out_bytes = out_rows * double(p.n) * out_esize;
  const double memory_us = (a_bytes + b_bytes + out_bytes) / (kBandwidth * bandwidth_efficiency(t)) * 1e6;
  return kLaunchUs + std::max(compute_us, memory_us);
}

}  // namespace gemmops::sm90
