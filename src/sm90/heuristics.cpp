// src/sm90/heuristics.cpp: waves of tiles against compute, bytes against bandwidth
// SPDX-License-Identifier: Apache-2.0
#include "sm90/heuristics.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "sm90/group_chunks.hpp"
#include "sm90/kernel_config.hpp"
#include "sm90/machine_model.hpp"

namespace gemmops::sm90 {
namespace {

constexpr double kSplitKMinGain = 0.9;  // a split must promise to save 10%

// The model's fields marked fitted (machine_model.hpp) and each design's Calibration (designs.cpp)
// are fitted to a sweep that timed every design on the 80 MoE shapes of the shared moe_shapes.csv,
// forward and weight gradient (H200, uniform tokens; bench/bench_grouped.py --sweep): with them the first
// operator is on average within 0.7% of the fastest (1-2% on shapes held out of the fit), against
// 2.7% for the constants before. bench/NOTES.md v7 has the run.

// Group sizes are on the device, so the host models two: rows (K-grouped: K) spread evenly, and a
// skewed split (Zipf, exponent 1.2, a quarter of the groups empty: distributions D3 and D5), and
// ranks designs by the geometric mean of the two. Real routing is never exactly even; a design
// whose cluster-sized units or tall tiles pay off only on even groups loses up to 30% on skewed
// ones (two-CTA TMA designs on 256 small experts; H200 sweep, bench/NOTES.md v9).
std::vector<double> skewed_group_sizes(double total, int groups) {
  if (groups <= 1) return {total};
  const int nonempty = std::max(1, 3 * groups / 4);
  std::vector<double> sizes(static_cast<size_t>(nonempty));
  double sum = 0;
  for (int j = 0; j < nonempty; ++j) {
    const int rank = static_cast<int>(std::floor(double(j) * groups / nonempty));  // spread over all ranks
    sizes[static_cast<size_t>(j)] = 1.0 / std::pow(rank + 1.0, 1.2);
    sum += sizes[static_cast<size_t>(j)];
  }
  // Whole rows (tokens), the remainder one each to the largest groups: a group's share below one
  // row is no group at all, not a tile.
  double assigned = 0;
  for (double& x : sizes) assigned += (x = std::floor(x * total / sum));
  const int left = static_cast<int>(std::llround(total - assigned));
  for (int i = 0; i < left; ++i) sizes[static_cast<size_t>(i % nonempty)] += 1;
  return sizes;
}

// K-grouped: the longest time any CTA (cluster) spends on its tiles, walked as the kernel's scheduler
// walks them (tile_scheduler.cuh): groups longest first, `units_per_group` units each, dealt out to
// `slots` clusters in a snake. A unit of a group costs `fixed_us` + `k_block_us` per k-block.
// Returns a negative number when there are too many units to deal out here (then they balance).
double k_grouped_makespan_us(std::vector<double> group_k_blocks, double units_per_group, int slots,
                             double fixed_us, double k_block_us) {
  constexpr double kMaxDealtUnits = 1 << 20;
  if (double(group_k_blocks.size()) * units_per_group > kMaxDealtUnits || slots < 1) return -1;
  std::sort(group_k_blocks.begin(), group_k_blocks.end(), std::greater<>());
  std::vector<double> load(static_cast<size_t>(slots), 0.0);
  int64_t unit = 0;
  const auto per_group = static_cast<int64_t>(units_per_group);
  for (double k_blocks : group_k_blocks) {
    const double cost = fixed_us + k_block_us * k_blocks;
    for (int64_t i = 0; i < per_group; ++i, ++unit) {
      const int64_t round = unit / slots, place = unit % slots;
      load[static_cast<size_t>(round % 2 == 1 ? slots - 1 - place : place)] += cost;
    }
  }
  return *std::max_element(load.begin(), load.end());
}

}  // namespace

double expected_units_of_routed_group(double mean, double unit, double& nonempty) {
  nonempty = 0;
  if (!(mean > 0) || !(unit > 0)) return 0.0;
  if (mean < 32) {  // Poisson: the pmf summed until its tail is negligible
    double p = std::exp(-mean), units = 0;
    const int last = static_cast<int>(mean + 12 * std::sqrt(mean) + 12);
    for (int x = 1; x <= last; ++x) {
      p *= mean / x;
      units += p * std::ceil(x / unit);
    }
    nonempty = 1 - std::exp(-mean);
    return units;
  }
  // Normal: whole rows at the midpoints of 64 equally likely slices (the standard normal's quantiles,
  // found once by bisection on its CDF).
  constexpr int kSlices = 64;
  static const std::array<double, kSlices> quantiles = [] {
    std::array<double, kSlices> z{};
    for (int i = 0; i < kSlices; ++i) {
      const double q = (i + 0.5) / kSlices;
      double lo = -8, hi = 8;
      for (int it = 0; it < 60; ++it) {
        const double mid = 0.5 * (lo + hi);
        (0.5 * std::erfc(-mid / std::sqrt(2.0)) < q ? lo : hi) = mid;
      }
      z[static_cast<size_t>(i)] = 0.5 * (lo + hi);
    }
    return z;
  }();
  const double sd = std::sqrt(mean);
  double units = 0;
  for (double z : quantiles) units += std::ceil(std::max(0.0, std::round(mean + sd * z)) / unit) / kSlices;
  nonempty = 1;
  return units;
}

int max_split_k(const KernelProblem& p) {
  if (p.kind == OperationKind::grouped_k) return 1;
  const int64_t k_blocks = (p.k + 63) / 64;
  return static_cast<int>(std::clamp<int64_t>(k_blocks / kMinSplitKBlocks, 1, kMaxSplitK));
}

double estimate_time_us(const KernelProblem& p, const Sm90Design& d, const MachineModel& m) {
  return choose_split_k(p, d, m).us;
}

SplitKChoice choose_split_k(const KernelProblem& p, const Sm90Design& d, const MachineModel& m) {
  SplitKChoice best{1, estimate_time_us(p, d, m, 1)};
  const double unsplit = best.us;
  for (int s = 2; s <= max_split_k(p); ++s) {
    const double us = estimate_time_us(p, d, m, s);
    if (us < best.us && us < kSplitKMinGain * unsplit) best = {s, us};
  }
  return best;
}

GroupSizes balanced_sizes_of(const KernelProblem& p, const MachineModel& m) {
  return p.kind == OperationKind::grouped_m && p.gather_a ? GroupSizes::routed : m.balanced_sizes;
}

double estimate_time_us(const KernelProblem& p, const Sm90Design& d, const MachineModel& m, int splits) {
  return std::sqrt(estimate_time_us(p, d, m, splits, balanced_sizes_of(p, m)) *
                   estimate_time_us(p, d, m, splits, GroupSizes::skewed));
}

double estimate_time_us(const KernelProblem& p, const Sm90Design& d, const MachineModel& model, int splits,
                        GroupSizes sizes) {
  if (p.rows == 0 || p.n == 0) return 0.0;  // nothing to store: nothing is launched
  const Design& t = d.design;
  const Calibration& cal = d.calibration;
  const bool k_grouped = p.kind == OperationKind::grouped_k;
  // Dense and batched problems have exact sizes: only grouped ones are skewed.
  const bool skewed = sizes == GroupSizes::skewed && (k_grouped || p.kind == OperationKind::grouped_m);
  // M-grouped: at most `rows` groups have rows. K-grouped: each group owns a (rows, N) result.
  const double groups = k_grouped ? std::max<double>(1, double(p.groups))
                                  : std::max<double>(1, std::min<double>(double(p.groups), double(p.rows)));
  const double rows_per_group = k_grouped ? double(p.rows) : double(p.rows) / groups;
  // Clusters take whole units of cluster_m tiles of one group: odd tile counts waste a tile.
  const double unit_m = double(t.tile_m) * t.cluster_m;
  const double m_units_per_group = std::ceil(rows_per_group / unit_m);
  double m_units = groups * m_units_per_group;
  double weight_groups = k_grouped ? 1.0 : groups;  // M-grouped: the groups whose B is read (those with rows)
  if (sizes == GroupSizes::routed && p.kind == OperationKind::grouped_m && groups > 1) {
    // Routing's noise: a group's count is rarely a whole number of units, so most groups end in a
    // partial one (the tile's rows past the group are loaded and computed, never stored).
    double nonempty = 1;
    m_units = groups * expected_units_of_routed_group(rows_per_group, unit_m, nonempty);
    weight_groups = groups * nonempty;
  }
  if (skewed && !k_grouped) {
    m_units = weight_groups = 0;
    for (double rows : skewed_group_sizes(double(p.rows), static_cast<int>(groups))) {
      m_units += std::ceil(rows / unit_m);
      weight_groups += rows > 0 ? 1.0 : 0.0;
    }
  }
  const double m_tiles = m_units * t.cluster_m;
  // A cluster along N takes cluster_n adjacent column tiles (the last unit's second may lie past N).
  const int cluster_size = t.cluster_m * t.cluster_n;
  const double n_tiles = std::ceil(double(p.n) / (t.tile_n * t.cluster_n)) * t.cluster_n;
  // Split-K: each tile is `splits` units over 1/splits of K; the last adds the others' fp32 partials.
  const double waves = std::ceil(m_tiles * n_tiles * splits / (std::floor(model.sms / cluster_size) * cluster_size));
  // K-grouped: a group's partial last k-block costs its 16-wide slices (the even estimate's half a
  // block was fitted with the calibrations); an empty group's tiles only store.
  std::vector<double> group_k_blocks;
  double k_blocks = std::ceil(double(p.k) / t.tile_k / splits);
  if (k_grouped) {
    if (skewed) {
      group_k_blocks.assign(static_cast<size_t>(groups), 0.0);
      const std::vector<double> sizes = skewed_group_sizes(double(p.k), static_cast<int>(groups));
      for (size_t g = 0; g < sizes.size(); ++g) group_k_blocks[g] = std::ceil(sizes[g] / 16) * 16 / t.tile_k + 0.5;
      k_blocks = 0;
      for (double kb : group_k_blocks) k_blocks += kb;
      k_blocks /= groups;
    } else {
      k_blocks = std::ceil(double(p.k) / groups / t.tile_k) + 0.5;
    }
  }
  const double sm_flops = model.peak_flops / model.sms;
  double k_block_us = 2.0 * t.tile_m * t.tile_n * t.tile_k / (sm_flops * cal.mainloop_efficiency) * 1e6;
  const double esize = double(size_of(p.a->dtype));
  const double a_bytes = double(p.rows) * double(p.k) * esize;
  // DRAM reads a gathered A's source rows once (a token's k pairs read one row of x); the tiles
  // still read one row per product row (a_bytes) from L2.
  const bool gathered_rows = !k_grouped && p.gather_a && p.a != nullptr;
  const double a_dram_bytes = gathered_rows ? std::min(a_bytes, double(p.a->size(0)) * double(p.k) * esize) : a_bytes;
  const double b_bytes = double(p.k) * double(p.n) * esize * weight_groups;
  if (!k_grouped && t.stages > 1) {
    // The ring keeps stages - 1 stages loading while one is consumed, so a k-block takes at least a
    // load's latency over stages - 1; the latency grows with the share of the loads that come from
    // DRAM (operand bytes over the bytes the tiles read). A shallow ring on short-K rows that
    // stream from DRAM is bound by it: 4-stage 128x128 ping-pong ran 28% slower than estimated on
    // K = 360, 64x256 ping-pong (5 stages) up to 15% on gpt-oss rows. Fitted on two forward sweeps
    // (first pick 1.8% -> 1.35% off the fastest design on each; bench/NOTES.md v11). The K-grouped
    // estimates carry their own fitted scales and were no better with it (1.003 -> 1.004).
    const double tile_reads = a_bytes * n_tiles + double(p.k) * double(p.n) * esize * m_units;
    const double miss = tile_reads > 0 ? std::min(1.0, (a_dram_bytes + b_bytes) / tile_reads) : 0.0;
    k_block_us = std::max(k_block_us, (model.load_latency_us + model.dram_miss_latency_us * miss) / (t.stages - 1));
  }
  const double tile_us = k_block_us * k_blocks;
  // Storing a tile from registers stalls the main loop for its bytes; the TMA epilogue overlaps
  // most of that with the next tile. A split unit writes (or the last one reads) fp32 partials.
  const double out_esize = double(size_of(p.out->dtype));
  // The epilogue's second operands (the pre-activation kept, the activation's backward) add their
  // bytes to the tile's store; ping-pong hides them as it hides the store.
  const double epilogue_esize = p.epilogue_bytes_per_element > 0 ? p.epilogue_bytes_per_element : out_esize;
  const double store_us = double(t.tile_m) * t.tile_n * epilogue_esize / (model.store_bandwidth / model.sms) * 1e6;
  const double partial_us =
      splits > 1 ? double(t.tile_m) * t.tile_n * 4.0 * (splits - 1) / (model.store_bandwidth / model.sms) * 1e6 : 0.0;
  const double epilogue_us =
      (t.epilogue == Epilogue::tma_store ? model.tma_store_share * store_us : store_us) + partial_us;
  // Ping-pong hides every epilogue but the CTA's last under the other warpgroup's main loop.
  const bool pingpong = t.schedule == Schedule::pingpong;
  const double unit_fixed_us = cal.tile_overhead_us + (pingpong ? 0.0 : epilogue_us);
  double busiest_us = waves * (tile_us + unit_fixed_us);
  if (!group_k_blocks.empty()) {  // skewed K: tiles differ, so the busiest CTA sets the time, not the waves
    const double dealt = k_grouped_makespan_us(group_k_blocks, m_units_per_group * n_tiles,
                                               static_cast<int>(std::floor(model.sms / cluster_size)), unit_fixed_us,
                                               k_block_us);
    if (dealt >= 0) busiest_us = dealt;
  }
  const double compute_us = busiest_us + (pingpong ? epilogue_us : 0.0);
  // DRAM: every operand once (the raster keeps a group's B in L2 while its M tiles pass). L2: A once
  // per N unit, B once per M unit (a cluster's multicast serves all its CTAs), out once.
  const double out_bytes = double(p.out_rows) * double(p.n) * epilogue_esize;
  const double dram_us = (a_dram_bytes + b_bytes + out_bytes) / (model.dram_bandwidth * cal.bandwidth_efficiency) * 1e6;
  const double b_tile_reads = double(p.k) * double(p.n) * esize * (k_grouped ? m_units_per_group : m_tiles / t.cluster_m);
  // Measured on the forward (M-grouped) form only; the K-grouped form's operands are not K-major.
  auto misaligned = [&](Major major, int64_t row_stride) {
    return !k_grouped && major == Major::k && (row_stride * int64_t(esize)) % 32 != 0;
  };
  // A's rows gathered (M-grouped) come by the producer's cp.async, not TMA: the model's own cost.
  const double a_l2_cost = gathered_rows ? model.gathered_row_l2_cost
                           : misaligned(p.a_major, p.a_stride) ? model.misaligned_row_l2_cost
                                                               : 1.0;
  const double b_l2_cost = misaligned(p.b_major, p.b_n_stride) ? model.misaligned_row_l2_cost : 1.0;
  const double l2_us =
      (a_bytes * (n_tiles / t.cluster_n) * a_l2_cost + b_tile_reads * b_l2_cost + out_bytes) / model.l2_bandwidth * 1e6;
  // More groups than the design's scheduler table holds run as several launches (group_chunks.hpp),
  // each paying the launch, table and pipeline fill: a design with little room for the table
  // (the _ring2 designs: 164 groups) then yields to one with more.
  const KernelConfig config = make_kernel_config(d, DType::bf16, DType::bf16, Major::k, Major::k, k_grouped);
  const double launches = std::max<double>(1, double(launch_count(p, config)));
  const double launch_us = model.launch_us + (splits > 1 ? model.split_k_memset_us : 0.0);
  const double us = launches * launch_us + std::max({compute_us, dram_us, l2_us});
  return k_grouped ? us * cal.k_grouped_time_scale : us;
}

}  // namespace gemmops::sm90
