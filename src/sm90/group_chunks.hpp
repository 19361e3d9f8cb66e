// src/sm90/group_chunks.hpp: a problem with more groups than one launch's shared-memory scheduler
// table holds runs as several launches, each over a chunk of consecutive groups
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <vector>

#include "sm90/kernel_config.hpp"
#include "sm90/kernel_problem.hpp"
#include "sm90/params.cuh"

namespace gemmops::sm90 {

/// Groups [first, first + count) of a problem, run by one launch. `zero_tail`: the launch also
/// zeroes out's rows past its last group (the last chunk of a problem with zero_tail).
struct GroupChunk {
  int64_t first = 0;
  int64_t count = 0;
  bool zero_tail = false;
  /// Entries of the launch's scheduler table: its groups, and the zero tail.
  int64_t table_groups() const { return count + (zero_tail ? 1 : 0); }
  bool operator==(const GroupChunk&) const = default;
};

/// The most scheduler-table entries a launch of `c` holds in `smem_bytes` of shared memory (0 when
/// its stages alone do not fit).
int64_t table_capacity(const KernelConfig& c, int64_t smem_bytes);

/// Consecutive chunks, in order, that cover `groups` groups, plus the zero tail's entry in the last
/// one when `zero_tail`; each holds at most `capacity` table entries, and their sizes differ by at
/// most one. Empty when there is nothing to launch (no group and no tail) or no entry fits.
std::vector<GroupChunk> split_groups(int64_t groups, bool zero_tail, int64_t capacity);

/// The chunks of `p` for `c` within a Hopper block's shared memory (kSm90SmemBudget): one chunk
/// unless the problem has thousands of groups (a few hundred with the _ring2 designs).
std::vector<GroupChunk> group_chunks(const KernelProblem& p, const KernelConfig& c);

/// group_chunks(p, c).size(), without building them (the estimate asks for every design).
int64_t launch_count(const KernelProblem& p, const KernelConfig& c);

/// `p` as one chunk's launch sees it (its groups and tail), for the launch's grid and shared memory.
KernelProblem chunk_problem(const KernelProblem& p, const GroupChunk& chunk);

/// Points the scheduler's `params`, made for the whole problem, at one chunk: its groups, their offsets and the end
/// of the group before them (read on the device: no host synchronisation), B's group coordinate and
/// out's K-grouped results counted from its first group, and the zero tail.
void apply_chunk(const KernelProblem& p, const GroupChunk& chunk, kernels::sm90::SchedulerParams* params);

}  // namespace gemmops::sm90
