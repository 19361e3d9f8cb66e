// kernels/sm90/tile_scheduler.cuh: persistent tile scheduler over the groups of a grouped GEMM.
// Tiles of all groups are numbered consecutively, group by group, so empty groups own no tile
// (M-grouped) and skewed groups cost only their own tiles. Inside a group, tiles go in bands of a
// few M units across all of N, so the tiles running at once share their A rows and B columns in
// L2. Offsets are read on the device once per CTA: no host synchronisation is needed.
// K-grouped, every group has the same tiles but a tile costs its group's K: the groups are walked
// longest first and the units dealt out in a snake (round r runs backwards when r is odd), a
// longest-processing-time-first order that keeps a few long experts from piling up on some CTAs
// (a skewed weight gradient lost 5-25% to that imbalance; bench/NOTES.md v10).
// With the zero tail (M-grouped) the table holds one more group, the rows past the last group's end:
// its tiles have no k-blocks, so the consumers store zeros there and the producer loads nothing.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "common/fast_divmod.cuh"
#include "sm90/config.cuh"
#include "sm90/params.cuh"

namespace gemmops::kernels::sm90 {

/// The tile a CTA works on.
struct TileCoord {
  int group;     // the problem's group (a launch of a chunk of groups adds its group_base)
  int row0;      // first row of out (M-grouped: also of A)
  int row_end;   // exclusive end row of the group in out: rows >= row_end are never stored
  int col0;      // first column of out and B
  int a_row0;    // first row of A
  int k_begin;   // first k of the first k-block (K-grouped: up to 7 below k_first, see kKBlockAlign)
  int k_first;   // the K range summed: [k_first, k_end) (all of K unless K-grouped or split)
  int k_end;
  int tile;      // the tile's number (all splits of a tile share it)
  int split;     // which of the k_splits parts of K this unit sums
  // A cluster's unit over one tile of rows and two adjacent column tiles (KernelConfig::
  // pairs_last_unit): its CTAs share the rows, CTA r takes the r-th column tile of the pair at col0.
  int paired = 0;
};

/// Scheduler units of a group's rows: `rows` in units of kUnitM, with n_tiles column units each;
/// with kPairTileM > 0 (a 2-CTA cluster along M whose CTAs are kPairTileM rows high) a last unit
/// whose rows one CTA covers takes two column tiles a unit instead (its CTAs side by side along N),
/// so the cluster's second CTA does not compute a tile of rows past the group for every column.
/// Sets `banded_m_units` to the units of rows walked in bands (all but a paired last one).
template <int kUnitM, int kPairTileM>
__device__ __forceinline__ int group_units(int rows, int n_tiles, int& banded_m_units, bool& paired_tail) {
  const int m_units = (rows + kUnitM - 1) / kUnitM;
  paired_tail = kPairTileM > 0 && m_units > 0 && rows - (m_units - 1) * kUnitM <= kPairTileM;
  banded_m_units = m_units - (paired_tail ? 1 : 0);
  return banded_m_units * n_tiles + (paired_tail ? (n_tiles + 1) / 2 : 0);
}

/// Per-group table in shared memory, built by the whole CTA before the roles split.
struct SchedulerTable {
  int* tile_end;   // (G,) inclusive prefix of tile counts (M-grouped)
  int* row_start;  // (G,)
  int* row_end;    // (G,)
  // K-grouped: each group has the same tiles, so the prefix is implicit and its space holds the
  // walk order: order[j] is the group walked j-th.
  __device__ int* order() const { return tile_end; }
};

/// The groups in the scheduler's table: the launch's groups and, with the zero tail (M-grouped
/// only), the tail after them.
__device__ __forceinline__ int table_groups(const SchedulerParams& p) { return p.table_groups; }

/// K-grouped orders at most this many groups by length (a CTA ranks them in O(G^2 / threads) at
/// start: about 5 us at this limit); beyond it, groups are walked in index order.
inline constexpr int kMaxOrderedGroups = 1024;

/// One warp lane's group range [start, end) of the aligned or masked M-grouped layouts (see
/// SchedulerParams). Aligned: a group starts at the previous group's (clamped) end rounded up to
/// `align`, which is the running max of the aligned raw ends before it and of the aligned carry
/// (rounding up is monotone and idempotent), and ends no earlier than it starts; the zero tail
/// starts where the groups' (clamped) offsets reach, offsets[G-1] for valid ones, as the CPU
/// operator starts it: past an empty last group, not at its rounded-up start. `carry_raw` is that
/// reach before this lane's chunk, updated to after it. Masked: rows [g * MaxM, g * MaxM + count),
/// counts clamped to [0, MaxM]. Malformed offsets only make groups shorter or empty. All 32 lanes
/// must call it.
__device__ __forceinline__ void aligned_or_masked_range(const SchedulerParams& p, int g, int lane, int raw_end,
                                                        int carry_rows, int& carry_raw, int limit, int align,
                                                        bool masked, int& start, int& end) {
  int before = ((raw_end < 0 ? 0 : raw_end) + align - 1) & -align;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {  // inclusive running max of the aligned ends
    int other = __shfl_up_sync(0xffffffffu, before, d);
    if (lane >= d && other > before) before = other;
  }
  before = __shfl_up_sync(0xffffffffu, before, 1);  // exclusive: the groups before this one
  const int aligned_carry = (carry_rows + align - 1) & -align;
  start = lane == 0 || aligned_carry > before ? aligned_carry : before;
  start = start > limit ? limit : start;
  end = raw_end < start ? start : raw_end;
  if (masked) {
    const int count = raw_end < 0 ? 0 : raw_end > p.rows_per_group ? p.rows_per_group : raw_end;
    const long long first = static_cast<long long>(p.group_base + g) * p.rows_per_group;
    start = first > limit ? limit : static_cast<int>(first);
    end = start + count > limit ? limit : start + count;
  }
  const int previous_end = __shfl_up_sync(0xffffffffu, end, 1);
  int reach = raw_end < carry_raw ? carry_raw : raw_end;  // (raw_end is clamped to limit by the caller)
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {  // inclusive running max of the offsets
    int other = __shfl_up_sync(0xffffffffu, reach, d);
    if (lane >= d && other > reach) reach = other;
  }
  const int reach_before = __shfl_up_sync(0xffffffffu, reach, 1);
  if (g == p.groups) start = masked ? (lane == 0 ? carry_rows : previous_end)  // (no tail when masked)
                                    : (lane == 0 ? carry_raw : reach_before);    // the zero tail
  carry_raw = __shfl_sync(0xffffffffu, reach, 31);
}

/// Fills the table; all threads of the CTA must call it, followed by __syncthreads(). The ranges are
/// rows (M-grouped) or K (K-grouped), where every group has the same tiles: its (rows, N) result.
/// Every CTA computes the same table (the walk order is a deterministic function of the offsets).
template <int kTileM, int kTileN, GroupAxis kAxis, int kPairTileM = 0>
__device__ void build_scheduler_table(const SchedulerParams& p, SchedulerTable t) {
  const int n_tiles = (p.n + kTileN - 1) / kTileN;
  const int limit = kAxis == GroupAxis::m ? p.rows : p.k;
  const int k_grouped_tiles = ((p.rows + kTileM - 1) / kTileM) * n_tiles;
  const int groups = kAxis == GroupAxis::m ? table_groups(p) : p.groups;
  // Aligned starts (a power of two; 1 on the K axis) and masked groups: M-grouped layouts only.
  const int align = kAxis == GroupAxis::m ? p.group_alignment : 1;
  const bool masked = kAxis == GroupAxis::m && p.masked != 0;
  // A group's raw (unclamped) end; the zero tail ends at the last row.
  auto raw_end_of = [&](int g) {
    if (kAxis == GroupAxis::m && g >= p.groups) return p.rows;
    return p.offsets != nullptr ? p.offsets[g] : (p.group_base + g + 1) * p.rows_per_group;
  };
  // M-grouped, the whole CTA first stages the raw ends in row_end, so reading the offsets is one
  // round trip to memory, not one per 32 groups in the scan below (single-token decode over 128
  // experts: 3-5% faster). K-grouped kernels read them in the scan: staged, they ran 0.7% slower
  // on the weight-gradient rows of the same A/B (bench/NOTES.md v11).
  constexpr bool kStaged = kAxis == GroupAxis::m;
  if constexpr (kStaged) {
    for (int g = threadIdx.x; g < groups; g += blockDim.x) t.row_end[g] = raw_end_of(g);
    __syncthreads();
  }
  // Warp 0 walks the groups in chunks of 32 with a warp-wide inclusive scan; G is at most a few
  // thousand, so this is a few microseconds of one warp at kernel start.
  if (threadIdx.x < 32) {
    const int lane = threadIdx.x;
    int carry_tiles = 0;
    // Where the launch's first group starts: the end of the chunk before it (read raw and clamped
    // like any end: with malformed offsets chunks may overlap, but never leave A, B or out).
    int carry_rows = p.start_offset != nullptr ? *p.start_offset : p.group_base * p.rows_per_group;
    carry_rows = carry_rows < 0 ? 0 : carry_rows > limit ? limit : carry_rows;  // then: the last group's end so far
    int carry_raw = carry_rows;  // aligned groups: how far the offsets reach so far (the zero tail's start)
    for (int base = 0; base < groups; base += 32) {
      const int g = base + lane;
      // A group's end needs the previous group's clamped end: read both raw ends and clamp
      // after a max-scan, which is what sequential clamping computes. Malformed offsets
      // (decreasing, negative, past the end) only make groups shorter or empty.
      int raw_end = 0;
      if (g < groups) {
        if constexpr (kStaged) {
          raw_end = t.row_end[g];  // staged above; lane g alone reads and rewrites it
        } else {
          raw_end = raw_end_of(g);
        }
      }
      raw_end = raw_end > limit ? limit : raw_end;
      int start, end;
      if (align == 1 && !masked) {  // contiguous groups (warp-uniform): the common path, kept lean
        end = raw_end < carry_rows ? carry_rows : raw_end;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {  // running max = sequential clamp against previous ends
          int other = __shfl_up_sync(0xffffffffu, end, d);
          if (lane >= d && other > end) end = other;
        }
        start = __shfl_up_sync(0xffffffffu, end, 1);
        if (lane == 0) start = carry_rows;
      } else {
        aligned_or_masked_range(p, g, lane, raw_end, carry_rows, carry_raw, limit, align, masked, start, end);
      }
      if (g >= groups) end = start;
      int tiles = k_grouped_tiles;
      if constexpr (kAxis == GroupAxis::m) {
        int banded;
        bool paired_tail;
        tiles = group_units<kTileM, kPairTileM>(end - start, n_tiles, banded, paired_tail);
      }
      if (g >= groups) tiles = 0;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        int other = __shfl_up_sync(0xffffffffu, tiles, d);
        if (lane >= d) tiles += other;
      }
      tiles += carry_tiles;
      if (g < groups) {
        if constexpr (kAxis == GroupAxis::m) t.tile_end[g] = tiles;
        t.row_start[g] = start;
        t.row_end[g] = end;
      }
      carry_tiles = __shfl_sync(0xffffffffu, tiles, 31);
      carry_rows = __shfl_sync(0xffffffffu, end, 31);
    }
  }
  if constexpr (kAxis == GroupAxis::k) {
    // Longest first, ties by index: group g's place is the number of groups that go before it.
    __syncthreads();
    const bool ordered = p.k_walk_longest_first != 0 && p.groups <= kMaxOrderedGroups;
    for (int g = threadIdx.x; g < p.groups; g += blockDim.x) {
      int place = g;
      if (ordered) {
        const int len = t.row_end[g] - t.row_start[g];
        place = 0;
        for (int h = 0; h < p.groups; ++h) {
          const int other = t.row_end[h] - t.row_start[h];
          place += other > len || (other == len && h < g);
        }
      }
      t.order()[place] = g;
    }
  }
}

/// Walks this CTA's scheduler units: cluster c of C takes unit c of every round of C units (kTileM
/// and kTileN are the unit's height and width: the rows or columns of all CTAs of a cluster;
/// kPairTileM: group_units); K-grouped, unit C - 1 - c of odd rounds. Units come in increasing
/// order, so the group cursor only moves forward. Every CTA of a cluster walks the same units. With split-K (M-grouped), a
/// tile is k_splits consecutive units, each summing a contiguous range of K's 64-wide blocks; the
/// last one, which waits for the others, always has the highest number, so every unit waits only
/// on units before it and a grid of co-resident CTAs cannot deadlock.
/// kFastDivide: the per-tile divisions as multiply-shifts (A/B in bench/NOTES.md v14: 0.3-0.8% faster
/// on cooperative kernels, 0.6-2% slower on ping-pong and small-M ones, up to 8% on one short-K row).
template <int kTileM, int kTileN, int kClusterSize, GroupAxis kAxis, int kKAlign = 1, bool kSplitK = false,
          bool kFastDivide = false, int kPairTileM = 0>
struct TileIterator {
  static_assert(kPairTileM == 0 || (kAxis == GroupAxis::m && !kSplitK), "paired units: M-grouped, no split-K");
  SchedulerTable table;
  int groups;       // the launch's groups (without the zero tail)
  int group_base;   // the problem's index of the launch's first group
  int rows;
  int k;
  int n_tiles;
  int band;
  int splits;
  int group_tiles;  // K-grouped: the tiles of every group
  int total_units;
  // The divisors of current(), fixed per launch: an integer division is ~20 instructions, and
  // every tile did four before its main loop (bench/NOTES.md v13).
  common::FastDivisor by_band_span;    // band * n_tiles: the tiles of a full band
  common::FastDivisor by_band;         // a full band's M units
  common::FastDivisor by_group_tiles;  // K-grouped
  common::FastDivisor by_splits;       // split-K
  int slot;         // this CTA's cluster: its place in every round of units
  bool snake;       // odd rounds run backwards (K-grouped, longest first)
  int round = 0;
  int unit;
  int group = 0;

  __device__ TileIterator(const SchedulerParams& p, int k_splits, SchedulerTable t)
      : table(t), groups(p.groups), group_base(p.group_base), rows(p.rows), k(p.k),
        n_tiles((p.n + kTileN - 1) / kTileN),
        band(p.raster_band > 0 ? p.raster_band : 1),
        splits(kSplitK && k_splits > 1 ? k_splits : 1),
        group_tiles(((p.rows + kTileM - 1) / kTileM) * n_tiles),
        total_units(kAxis == GroupAxis::k ? p.groups * group_tiles
                                          : (table_groups(p) > 0 ? t.tile_end[table_groups(p) - 1] : 0) * splits),
        by_band_span(band * n_tiles), by_band(band), by_group_tiles(group_tiles), by_splits(splits),
        slot(blockIdx.x / kClusterSize), snake(kAxis == GroupAxis::k && p.k_walk_longest_first != 0), unit(slot) {}

  __device__ bool valid() const { return unit < total_units; }

  __device__ int divide(int x, const common::FastDivisor& by) const {
    if constexpr (kFastDivide) return by.quotient(x);
    else return x / int(by.divisor);
  }

  __device__ TileCoord current() {
    const int tile = kSplitK ? divide(unit, by_splits) : unit;
    const int split = kSplitK ? unit - tile * splits : 0;
    int first, m_units;
    if constexpr (kAxis == GroupAxis::k) {
      const int walked = divide(tile, by_group_tiles);
      group = table.order()[walked];
      first = walked * group_tiles;
      m_units = (rows + kTileM - 1) / kTileM;
    } else {
      while (table.tile_end[group] <= tile) ++group;
      first = group > 0 ? table.tile_end[group - 1] : 0;
    }
    const int local = tile - first;
    if constexpr (kAxis == GroupAxis::m) {
      // The units as the table counts them; m_units: those walked in bands.
      bool paired_tail;
      group_units<kTileM, kPairTileM>(table.row_end[group] - table.row_start[group], n_tiles, m_units, paired_tail);
      if (paired_tail && local >= m_units * n_tiles) {  // the group's last unit, two column tiles a unit
        const int row0 = table.row_start[group] + m_units * kTileM;
        const int group_k = group < groups ? k : 0;
        return {group_base + group, row0, table.row_end[group], (local - m_units * n_tiles) * 2 * kTileN, row0, 0, 0,
                group_k, tile, 0, 1};
      }
    }
    // Band b holds `band` M units (fewer in the group's last band) across all N tiles, M fastest.
    const int b = divide(local, by_band_span);
    const int in_band = local - b * band * n_tiles;
    const int band_rows = m_units - b * band < band ? m_units - b * band : band;
    const int n_blk = band_rows == band ? divide(in_band, by_band)
                      : kFastDivide         ? common::small_quotient(in_band, band_rows)
                                            : in_band / band_rows;
    const int m_blk = b * band + (in_band - n_blk * band_rows);
    if constexpr (kAxis == GroupAxis::m) {
      const int row0 = table.row_start[group] + m_blk * kTileM;
      // The zero tail (the table's group past the launch's groups) sums no K: its tiles store zeros.
      const int group_k = group < groups ? k : 0;
      if constexpr (!kSplitK) {
        return {group_base + group, row0, table.row_end[group], n_blk * kTileN, row0, 0, 0, group_k, tile, 0};
      } else {
        const int k_blocks = (group_k + 63) / 64;
        const int k0 = 64 * (split * k_blocks / splits);
        const int k1 = 64 * ((split + 1) * k_blocks / splits);
        return {group_base + group, row0, table.row_end[group], n_blk * kTileN, row0, k0, k0, k1 < k ? k1 : k,
                tile, split};
      }
    } else {
      const int a_row0 = m_blk * kTileM;
      const int k_first = table.row_start[group], k_end = table.row_end[group];
      // An empty range stays empty: no k-block, the result is zeros.
      const int k_begin = k_end > k_first ? k_first - k_first % kKAlign : k_first;
      const int result = group_base + group;  // its (rows, N) block of out
      return {result, result * rows + a_row0, (result + 1) * rows, n_blk * kTileN, a_row0, k_begin, k_first, k_end,
              tile, 0};
    }
  }

  __device__ void advance() {
    const int clusters = gridDim.x / kClusterSize;
    ++round;
    unit = round * clusters + (snake && (round & 1) ? clusters - 1 - slot : slot);
  }
};

}  // namespace gemmops::kernels::sm90
