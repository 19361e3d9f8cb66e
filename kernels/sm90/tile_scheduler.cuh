// kernels/sm90/tile_scheduler.cuh: persistent tile scheduler over the groups of a grouped GEMM.
// Tiles of all groups are numbered consecutively (group by group, N fastest inside a group), so
// empty groups own no tile and skewed groups cost only their own tiles. Offsets are read on the
// device once per CTA, so no host synchronisation is needed.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "sm90/params.cuh"

namespace gemmops::kernels::sm90 {

/// The tile a CTA works on: its group, first row, end row of the group, and first column.
struct TileCoord {
  int group;
  int row0;      // first row of the tile (global row of A / out)
  int row_end;   // exclusive end row of the group: rows >= row_end are never stored
  int col0;
};

/// Per-group table in shared memory, built by the whole CTA before the roles split.
struct SchedulerTable {
  int* tile_end;   // (G,) inclusive prefix of tile counts
  int* row_start;  // (G,)
  int* row_end;    // (G,)
};

/// Group g's rows, clamped so that malformed offsets (decreasing, negative or past `rows`) can
/// never address memory outside A or out: such a group just becomes shorter or empty.
__device__ __forceinline__ void group_rows(const GroupedGemmParams& p, int g, int prev_end, int* start, int* end) {
  int e = p.offsets != nullptr ? p.offsets[g] : (g + 1) * p.rows_per_group;
  e = e < prev_end ? prev_end : e;
  e = e > p.rows ? p.rows : e;
  *start = prev_end;
  *end = e;
}

/// Fills the table; all threads of the CTA must call it, followed by __syncthreads().
template <int kTileM, int kTileN>
__device__ void build_scheduler_table(const GroupedGemmParams& p, SchedulerTable t) {
  const int n_tiles = (p.n + kTileN - 1) / kTileN;
  // Warp 0 walks the groups in chunks of 32 with a warp-wide inclusive scan; G is at most a few
  // thousand, so this is a few microseconds of one warp at kernel start.
  if (threadIdx.x < 32) {
    const int lane = threadIdx.x;
    int carry_tiles = 0;
    int carry_rows = 0;  // end row of the previous chunk's last group
    for (int base = 0; base < p.groups; base += 32) {
      const int g = base + lane;
      // A group's end needs the previous group's clamped end: read both raw ends and clamp
      // after a max-scan, which is what sequential clamping computes.
      int raw_end = 0;
      if (g < p.groups) raw_end = p.offsets != nullptr ? p.offsets[g] : (g + 1) * p.rows_per_group;
      raw_end = raw_end > p.rows ? p.rows : raw_end;
      int end = raw_end < carry_rows ? carry_rows : raw_end;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {  // running max = sequential clamp against previous ends
        int other = __shfl_up_sync(0xffffffffu, end, d);
        if (lane >= d && other > end) end = other;
      }
      int start = __shfl_up_sync(0xffffffffu, end, 1);
      if (lane == 0) start = carry_rows;
      if (g >= p.groups) end = start;
      int tiles = ((end - start + kTileM - 1) / kTileM) * n_tiles;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        int other = __shfl_up_sync(0xffffffffu, tiles, d);
        if (lane >= d) tiles += other;
      }
      tiles += carry_tiles;
      if (g < p.groups) {
        t.tile_end[g] = tiles;
        t.row_start[g] = start;
        t.row_end[g] = end;
      }
      carry_tiles = __shfl_sync(0xffffffffu, tiles, 31);
      carry_rows = __shfl_sync(0xffffffffu, end, 31);
    }
  }
}

/// Walks this CTA's scheduler units: cluster c of C takes units c, c + C, ... (kTileM is the unit's
/// height: the rows of all CTAs of a cluster). Units come in increasing order, so the group cursor
/// only moves forward. Every CTA of a cluster walks the same units.
template <int kTileM, int kTileN, int kClusterM = 1>
struct TileIterator {
  SchedulerTable table;
  int groups;
  int n_tiles;
  int total_tiles;
  int tile;
  int group = 0;

  __device__ TileIterator(const GroupedGemmParams& p, SchedulerTable t)
      : table(t), groups(p.groups), n_tiles((p.n + kTileN - 1) / kTileN),
        total_tiles(p.groups > 0 ? t.tile_end[p.groups - 1] : 0), tile(blockIdx.x / kClusterM) {}

  __device__ bool valid() const { return tile < total_tiles; }

  __device__ TileCoord current() {
    while (table.tile_end[group] <= tile) ++group;
    const int first = group > 0 ? table.tile_end[group - 1] : 0;
    const int local = tile - first;
    const int m_blk = local / n_tiles;
    const int n_blk = local - m_blk * n_tiles;
    return {group, table.row_start[group] + m_blk * kTileM, table.row_end[group], n_blk * kTileN};
  }

  __device__ void advance() { tile += gridDim.x / kClusterM; }
};

}  // namespace gemmops::kernels::sm90
