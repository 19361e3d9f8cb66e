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

// Fraction of peak a tile shape sustains in its main loop (wider tiles reuse more per byte).
double mainloop_efficiency(const Design& d) {
  // A 2-CTA cluster shares B through multicast: less L2 traffic per FLOP (H200, DeepSeek-V3 up
  // 16384x4096x7168: 1167 us against 1361 us for one CTA). The wide tile edges out the narrow
  // one at equal waves; the narrow one wins where it quantises into fewer waves (the seed problem).
  // The TMA epilogue gives one of the stages to its staging slabs: a little less latency hiding.
  if (d.tile_m >= 128 && d.cluster_m > 1) {
    const double e = d.tile_n >= 256 ? 0.9 : 0.88;
    return d.epilogue == Epilogue::tma_store ? e - 0.03 : e;
  }
  if (d.tile_m >= 128 && d.tile_n >= 256) return 0.85;
  if (d.tile_m >= 128) return 0.75;
  if (d.tile_n >= 256) return 0.62;
  return 0.55;
}

}  // namespace

double estimate_time_us(const KernelProblem& p, const Sm90Design& d) {
  const Design& t = d.design;
  const double groups = std::max<double>(1, double(p.groups));
  const double rows_per_group = double(p.rows) / groups;
  // Clusters take whole units of cluster_m tiles of one group: odd tile counts waste a tile.
  const double unit_m = double(t.tile_m) * t.cluster_m;
  const double m_tiles = groups * std::ceil(rows_per_group / unit_m) * t.cluster_m;
  const double n_tiles = std::ceil(double(p.n) / t.tile_n);
  const double tiles = m_tiles * n_tiles;
  const double waves = std::ceil(tiles / (std::floor(kSms / t.cluster_m) * t.cluster_m));
  const double tile_us = 2.0 * t.tile_m * t.tile_n * double(p.k) / (kPeakFlops / kSms * mainloop_efficiency(t)) * 1e6;
  // Storing a tile from registers stalls the main loop for its bytes at the SM's share of the
  // write bandwidth; the TMA epilogue overlaps most of that with the next tile.
  const double store_us = double(t.tile_m) * t.tile_n * 2.0 / (kBandwidth / kSms) * 1e6;
  const double epilogue_us = t.epilogue == Epilogue::tma_store ? 0.25 * store_us : store_us;
  const double compute_us = waves * (tile_us + epilogue_us);
  // Each group's B is read once per M tile of the group; A once per N tile (mostly from L2).
  const double esize = 2.0;
  const double b_bytes = double(p.k) * double(p.n) * esize * m_tiles / t.cluster_m;
  const double a_bytes = double(p.rows) * double(p.k) * esize;
  const double out_bytes = double(p.rows) * double(p.n) * esize;
  const double memory_us = (a_bytes + b_bytes + out_bytes) / kBandwidth * 1e6;
  return kLaunchUs + std::max(compute_us, memory_us);
}

}  // namespace gemmops::sm90
