// src/moe/route.cpp: route() on the host (a stable counting sort) or on a CUDA device (three kernels,
// kernels/moe/route.cuh, compiled per architecture on first use)
// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/env.hpp"
#include "cuda/launch.hpp"
#include "gemmops/moe.hpp"
#include "moe/moe_device.hpp"
#include "moe/moe_rules.hpp"
#include "moe/route_kernels.hpp"
#include "moe/route_params.cuh"
#include "simt/arch_modules.hpp"

namespace gemmops {
namespace {

namespace k = kernels::moe;

int64_t chunks_of(int64_t pairs) { return (pairs + k::kChunk - 1) / k::kChunk; }

/// The wide kernels' chunk: kWideMinChunk pairs or more, a multiple of 32, few enough chunks that
/// (experts + 1) x chunks stays within kWideMaxCounts.
int64_t wide_chunk(int64_t pairs, int experts) {
  const int64_t most_chunks = std::max<int64_t>(1, k::kWideMaxCounts / (int64_t{experts} + 1));
  const int64_t chunk = std::max<int64_t>(k::kWideMinChunk, (pairs + most_chunks - 1) / most_chunks);
  return (chunk + 31) / 32 * 32;
}

/// The wide kernels' workspace: counts and starts, (experts + 1) x chunks ints each.
std::size_t wide_workspace_size(int64_t pairs, int experts) {
  const int64_t chunk = wide_chunk(pairs, experts), chunks = (pairs + chunk - 1) / chunk;
  return static_cast<std::size_t>(2 * chunks * (int64_t{experts} + 1) * 4);
}

int bucket_of(int32_t id, int experts) { return id >= 0 && id < experts ? id : experts; }

/// The host's stable counting sort: the kernels' rows, one pair after another.
void route_on_host(const RouteArguments& a) {
  const int64_t pairs = a.topk_ids.numel(), kk = a.topk_ids.size(1);
  const int experts = a.num_experts;
  const auto* ids = static_cast<const int32_t*>(a.topk_ids.data);
  std::vector<int64_t> next(static_cast<size_t>(experts) + 1, 0);
  for (int64_t i = 0; i < pairs; ++i) ++next[static_cast<size_t>(bucket_of(ids[i], experts)) + 0];
  int64_t row = 0;
  auto* offsets = static_cast<int32_t*>(a.offsets.data);
  for (int e = 0; e <= experts; ++e) {
    const int64_t n = next[static_cast<size_t>(e)];
    next[static_cast<size_t>(e)] = row;
    row += n;
    if (e < experts) offsets[e] = static_cast<int32_t>(row);
  }
  auto* token = static_cast<int32_t*>(a.token.data);
  auto* pair = static_cast<int32_t*>(a.pair.data);
  const auto* scores = a.scores ? static_cast<const float*>(a.scores->data) : nullptr;
  auto* sorted = a.sorted_scores ? static_cast<float*>(a.sorted_scores->data) : nullptr;
  for (int64_t i = 0; i < pairs; ++i) {
    const int64_t r = next[static_cast<size_t>(bucket_of(ids[i], experts))]++;
    token[r] = static_cast<int32_t>(i / kk);
    pair[i] = static_cast<int32_t>(r);
    if (sorted != nullptr) sorted[r] = scores[i];
  }
}

const simt::ArchModules& route_modules() {
  static const simt::ArchModules modules(moe::route_request());
  return modules;
}

Status route_on_device(const RouteArguments& a, Stream stream, Workspace workspace) {
  const int ordinal = a.topk_ids.device.index;
  GEMMOPS_ASSIGN_OR_RETURN(const moe::MoeDevice device, moe::moe_device(ordinal, "topk_ids", "route"));
  const cuda::DriverApi* api = device.api;
  const int64_t pairs = a.topk_ids.numel();
  const std::size_t need = route_workspace_size(pairs, a.num_experts);
  if (need > 0 && (workspace.data == nullptr || workspace.bytes < need)) {
    return invalid_argument("workspace: route needs " + std::to_string(need) + " bytes on the device for " +
                            std::to_string(pairs) + " pairs and " + std::to_string(a.num_experts) +
                            " experts (route_workspace_size); got " + std::to_string(workspace.bytes));
  }
  GEMMOPS_ASSIGN_OR_RETURN(std::shared_ptr<const simt::ArchModule> arch, route_modules().for_cc(device.facts.cc));
  const auto& names = arch->compiled->lowered_names;
  k::RouteParams p{};
  p.ids = static_cast<const int*>(a.topk_ids.data);
  p.scores = a.scores ? static_cast<const float*>(a.scores->data) : nullptr;
  p.counts = static_cast<int*>(workspace.data);
  p.offsets = static_cast<int*>(a.offsets.data);
  p.token = static_cast<int*>(a.token.data);
  p.pair = static_cast<int*>(a.pair.data);
  p.sorted_scores = a.sorted_scores ? static_cast<float*>(a.sorted_scores->data) : nullptr;
  p.pairs = static_cast<int>(pairs);
  p.k = static_cast<int>(std::max<int64_t>(1, a.topk_ids.size(1)));
  p.experts = a.num_experts;
  p.blocks = static_cast<int>(chunks_of(pairs));
  const bool wide = moe::route_uses_wide_kernels(pairs);
  if (wide) {
    p.chunk = static_cast<int>(wide_chunk(pairs, a.num_experts));
    p.blocks = static_cast<int>((pairs + p.chunk - 1) / p.chunk);
    p.starts = p.counts + static_cast<int64_t>(p.blocks) * (a.num_experts + 1);
  }
  const unsigned bucket_bytes = static_cast<unsigned>(a.num_experts + 1) * 4u;
  void* params[] = {&p};
  // Count and scatter: a warp a chunk. The scan runs even without pairs: it writes the offsets.
  for (int which = 0; which < 3; ++which) {
    if (which != 1 && p.blocks == 0) continue;
    const size_t name = static_cast<size_t>(which + (wide ? 3 : 0));
    GEMMOPS_ASSIGN_OR_RETURN(CUfunction fn, arch->module.function(ordinal, names.at(name)));
    cuda::LaunchConfig lc;
    lc.grid[0] = which == 1 ? 1u : static_cast<unsigned>(p.blocks);
    lc.block[0] = which == 1 ? static_cast<unsigned>(k::kScanThreads) : 32u;
    lc.smem_bytes = wide && which == 1 ? 0u : bucket_bytes;
    lc.stream = static_cast<CUstream>(stream);
    GEMMOPS_TRY(cuda::launch(*api, fn, lc, params));
  }
  return Status::ok();
}

}  // namespace

namespace moe {

// The wide kernels cut the pairs into chunks of a few hundred, so every SM counts and places some;
// the chunked ones into chunks of kChunk (16 of them for 65536 pairs). On an H100 (bench_route,
// 2026-12-07, fifth session) the wide ones took 15.6, 18.9 and 58.8 us for 8192, 32768 and 65536
// pairs where the chunked took 112-135 (and torch's sort 101-118), but 189.8 against 140.4 for
// 262144: their one-block scan of (experts + 1) x chunks counts grows with the pairs. So up to
// 131072 pairs (Qwen3-30B-A3B's T = 16384 at top-8), a margin below where the two lines cross.
bool route_uses_wide_kernels(std::int64_t pairs) {
  if (const auto forced = env::route_kernels()) return *forced == "wide";
  return pairs <= 131072;
}

jit::CompileRequest route_request() {
  jit::CompileRequest req;
  req.kernel_name = "moe_route";
  req.source = "#include \"moe/route.cuh\"\n";
  const std::string ns = "gemmops::kernels::moe::";
  req.name_expressions = {ns + "route_count_kernel",      ns + "route_scan_kernel",      ns + "route_scatter_kernel",
                          ns + "route_count_wide_kernel", ns + "route_scan_wide_kernel", ns + "route_scatter_wide_kernel"};
  req.options.push_back("--ptxas-options=--warn-on-spills");
  return req;
}

}  // namespace moe

std::size_t route_workspace_size(std::int64_t pairs, int num_experts) {
  if (pairs <= 0 || num_experts < 1) return 0;
  // Enough for either set of kernels (which one runs is read at each call).
  return std::max(static_cast<std::size_t>(chunks_of(pairs)) * static_cast<std::size_t>(num_experts + 1) * 4u,
                  wide_workspace_size(pairs, num_experts));
}

Status route(const RouteArguments& a, Stream stream, Workspace workspace) {
  GEMMOPS_TRY(validate(a));
  GEMMOPS_TRY(moe::refuse_fakes(
      {{&a.topk_ids, "topk_ids"}, {&a.offsets, "offsets"}, {&a.token, "token"}, {&a.pair, "pair"},
       {a.scores ? &*a.scores : nullptr, "scores"}, {a.sorted_scores ? &*a.sorted_scores : nullptr, "sorted_scores"}}));
  if (!a.topk_ids.device.is_cuda()) {
    route_on_host(a);
    return Status::ok();
  }
  return route_on_device(a, stream, workspace);
}

}  // namespace gemmops
