// src/sm90/designs.cpp: the table of registered Hopper designs
// SPDX-License-Identifier: Apache-2.0
#include "sm90/designs.hpp"

namespace gemmops::sm90 {
namespace {

constexpr Design tile(int m, int n, int stages, Schedule s, int cluster_m = 1, Epilogue e = Epilogue::store) {
  return Design{.tile_m = m, .tile_n = n, .tile_k = 64, .cluster_m = cluster_m, .cluster_n = 1, .stages = stages,
                .schedule = s, .epilogue = e};
}

// Stages fill the ~227 KiB of shared memory a Hopper block may use, leaving room for the
// scheduler's per-group table (12 bytes a group).
const Sm90Design kDesigns[] = {
    {tile(128, 256, 4, Schedule::cooperative, 2), 2},  // large problems: B multicast to 2 CTAs halves L2 traffic
    {tile(128, 128, 6, Schedule::cooperative, 2), 2},
    // Short K (down projections): the TMA epilogue overlaps the stores with the next tile, at the
    // price of one stage of shared memory for the staging slabs (16-bit outputs only).
    {tile(128, 256, 3, Schedule::cooperative, 2, Epilogue::tma_store), 2},
    {tile(128, 128, 5, Schedule::cooperative, 2, Epilogue::tma_store), 2},
    {tile(128, 256, 4, Schedule::cooperative), 2},  // large problems: most FLOPs per byte of smem
    {tile(128, 128, 6, Schedule::cooperative), 2},  // mid-size N, more tiles for load balance
    // Ping-pong: each of the two warpgroups owns a whole tile and they take the CTA's tiles in
    // turn, so one's epilogue (and its wait for the next tile's first stage) runs under the
    // other's main loop: for many short-K tiles, where the per-tile cost is a large share.
    {tile(128, 128, 6, Schedule::pingpong), 2},
    // (128x128 ping-pong with 2-CTA clusters deadlocked on many tiles per CTA: bench/NOTES.md v6.)
    {tile(64, 256, 5, Schedule::pingpong), 2},
    {tile(64, 256, 5, Schedule::pingpong, 2), 2},
    {tile(128, 128, 4, Schedule::pingpong, 1, Epilogue::tma_store), 2},
    {tile(64, 128, 8, Schedule::small_m), 1},       // decode: groups of a few rows, weight-bandwidth bound
    {tile(64, 256, 5, Schedule::small_m), 1},       // decode with wide N: fewer, longer weight streams
};

}  // namespace

std::span<const Sm90Design> sm90_designs() { return kDesigns; }

}  // namespace gemmops::sm90
