// src/sm90/group_chunks.cpp: the chunks of groups one problem's launches cover, and each launch's view
// SPDX-License-Identifier: Apache-2.0
#include "sm90/group_chunks.hpp"

#include <algorithm>

#include "sm90/grouped_gemm.hpp"

namespace gemmops::sm90 {

int64_t table_capacity(const KernelConfig& c, int64_t smem_bytes) {
  return std::max<int64_t>(0, (smem_bytes - c.smem_bytes(0)) / KernelConfig::scheduler_bytes(1));
}

namespace {

int64_t chunks_for(int64_t entries, int64_t capacity) {
  return entries <= 0 || capacity <= 0 ? 0 : (entries + capacity - 1) / capacity;
}

// Only the M-grouped form has a tail past its last group; the others write every row of out.
bool has_zero_tail(const KernelProblem& p) { return p.zero_tail && p.kind == OperationKind::grouped_m; }

}  // namespace

std::vector<GroupChunk> split_groups(int64_t groups, bool zero_tail, int64_t capacity) {
  const int64_t entries = groups + (zero_tail ? 1 : 0);
  const int64_t launches = chunks_for(entries, capacity);
  if (launches == 0) return {};
  // Even sizes rather than full chunks and a short last one: every launch then fills the device
  // about as well, and none is a near-empty launch of its own.
  const int64_t base = entries / launches, longer = entries % launches;
  std::vector<GroupChunk> chunks;
  chunks.reserve(static_cast<std::size_t>(launches));
  int64_t first = 0;
  for (int64_t i = 0; i < launches; ++i) {
    const int64_t size = base + (i < longer ? 1 : 0);
    const bool last = i + 1 == launches;
    const bool tail = last && zero_tail;
    chunks.push_back({first, size - (tail ? 1 : 0), tail});
    first += size;
  }
  return chunks;
}

std::vector<GroupChunk> group_chunks(const KernelProblem& p, const KernelConfig& c) {
  return split_groups(p.groups, has_zero_tail(p), table_capacity(c, kSm90SmemBudget));
}

int64_t launch_count(const KernelProblem& p, const KernelConfig& c) {
  return chunks_for(p.groups + (has_zero_tail(p) ? 1 : 0), table_capacity(c, kSm90SmemBudget));
}

KernelProblem chunk_problem(const KernelProblem& p, const GroupChunk& chunk) {
  KernelProblem q = p;
  q.groups = chunk.count;
  q.zero_tail = chunk.zero_tail;
  return q;
}

void apply_chunk(const KernelProblem& p, const GroupChunk& chunk, kernels::sm90::SchedulerParams* params) {
  params->groups = static_cast<int32_t>(chunk.count);
  params->group_base = static_cast<int32_t>(chunk.first);
  params->table_groups = static_cast<int32_t>(chunk.table_groups());
  // Without offsets (dense, batched) the kernel places the groups from group_base alone.
  if (p.offsets != nullptr) {
    params->offsets = p.offsets + chunk.first;
    // Masked groups are placed from group_base alone (their offsets are counts, not ends).
    params->start_offset = chunk.first > 0 && !p.masked ? p.offsets + chunk.first - 1 : nullptr;
  } else {
    params->offsets = nullptr;
    params->start_offset = nullptr;
  }
}

}  // namespace gemmops::sm90
