// src/sm90/launch_grouped.cpp: tensor maps, grid size and the launch of the grouped GEMM kernel
// SPDX-License-Identifier: Apache-2.0
#include "sm90/launch_grouped.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "core/env.hpp"
#include "cuda/context.hpp"
#include "cuda/device.hpp"
#include "cuda/driver_api.hpp"
#include "cuda/launch.hpp"
#include "cuda/occupancy.hpp"
#include "cuda/tensor_map.hpp"
#include "sm90/group_chunks.hpp"

namespace gemmops::sm90 {
namespace {

using kernels::sm90::BMajor;
using kernels::sm90::TensorMap;

// The parameters' size is part of every kernel's PTX: growing it is a deliberate change. (The fp8
// main loop's ScaleParams fill tail padding; the pre-activation's map came last, so every other
// field kept its offset; h's map for the TMA store's backward came after it.)
static_assert(sizeof(kernels::sm90::GroupedGemmParams) == 960, "GroupedGemmParams grew: every kernel's PTX changes");

// The TMA element type of a dtype: its size is what the box and stride bytes count in. 8-bit floats
// travel as bytes (TMA has no fp8 type); a dtype without one is refused, never taken for another.
Result<CUtensorMapDataType> tma_type(DType t, const char* operand) {
  switch (t) {
    case DType::bf16: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case DType::fp16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case DType::fp32: return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case DType::e4m3:
    case DType::e5m2: return CU_TENSOR_MAP_DATA_TYPE_UINT8;
    default: break;
  }
  return unsupported(std::string(operand) + ": sm90 tensor maps take bf16, fp16, fp32, e4m3 or e5m2; got " +
                     std::string(name(t)));
}

void store_map(const CUtensorMap& m, TensorMap* dst) {
  static_assert(sizeof(CUtensorMap) == sizeof(TensorMap), "TensorMap mirrors CUtensorMap");
  std::memcpy(dst, &m, sizeof(m));
}

// Extents a tensor map may not have as zero: a K of 0 still needs one (never loaded) column.
uint64_t at_least_one(int64_t v) { return v > 0 ? static_cast<uint64_t>(v) : 1; }

// A tensor map's stride in bytes; the stride of a dimension of extent 1 is never stepped, so any
// legal value (a multiple of 16) will do.
uint64_t stride_bytes(int64_t stride, int64_t extent, uint64_t esize) {
  return extent > 1 ? static_cast<uint64_t>(stride) * esize : 16;
}

// An operand without elements (K = 0, or no groups) is never read, but its tensor map must still
// encode: torch gives such tensors a null pointer and strides like (1, 1), so its map is one
// element at out's address (out has elements whenever a launch happens), every stride 16 bytes.
void* map_address(const TensorDesc& t, const KernelProblem& p) { return t.numel() > 0 ? t.data : p.out->data; }
int64_t map_extent(const TensorDesc& t, int64_t extent) { return t.numel() > 0 ? extent : 1; }

// Scheduler units of M walked together across N: about square footprints of the tiles that run at
// once, so they share A rows and B columns in L2 (a whole wave of one row of units would stream
// all of a wide B from DRAM for every M unit).
int raster_band(const KernelConfig& c, int64_t concurrent_units) {
  const double unit_cols = double(c.unit_n()), unit_rows = double(c.unit_m());
  const int band = static_cast<int>(std::lround(std::sqrt(double(concurrent_units) * unit_cols / unit_rows)));
  return std::max(1, band);
}

// Flags first, then the partials at a 256-byte boundary.
std::size_t split_k_flag_bytes(int64_t slots) { return (static_cast<std::size_t>(slots) * 4 + 255) / 256 * 256; }

int64_t split_k_slots(const KernelProblem& p, const KernelConfig& c) {
  const int64_t parts = c.pingpong() ? 1 : c.consumers;  // warpgroups that own rows of one tile
  return max_scheduler_units(p, c) * c.cluster_size() * parts;
}

// A TMA store's ragged view of a row-major tensor (kernels/sm90/params.cuh): dims {cols, 64, rows + 1}
// with both row dims one row apart, based 64 rows before `data` (no box reaches above row 0), boxes
// of 64 x 64; with `planes` > 0, a fourth dim of that many planes, each `cols` columns after the
// last (a gated op's concatenated halves; the callers' rules keep that a 16-byte multiple).
Result<CUtensorMap> ragged_store_map(const cuda::DriverApi& api, DType dtype, const char* role, void* data,
                                     int64_t cols, int64_t rows, int64_t row_stride, int planes = 0) {
  const uint64_t esize = size_of(dtype);
  const uint64_t plane_bytes = planes > 1 ? static_cast<uint64_t>(cols) * esize : 16;  // (one plane: unused)
  const uint64_t row_bytes = stride_bytes(row_stride, rows, esize);
  const uint64_t dims[4] = {at_least_one(cols), 64, static_cast<uint64_t>(std::max<int64_t>(rows, 0)) + 1,
                            static_cast<uint64_t>(planes)};
  const uint64_t strides[3] = {row_bytes, row_bytes, plane_bytes};
  const uint32_t box[4] = {64, 64, 1, 1};
  GEMMOPS_ASSIGN_OR_RETURN(const CUtensorMapDataType type, tma_type(dtype, role));
  void* early = static_cast<char*>(data) - 64 * row_bytes;
  return cuda::encode_tiled(api, type, planes > 0 ? 4 : 3, early, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B);
}

}  // namespace

int64_t max_scheduler_units(const KernelProblem& p, const KernelConfig& c) {
  const int64_t n_tiles = (p.n + c.unit_n() - 1) / c.unit_n();  // (units of N)
  const int64_t m_units_of_rows = (p.rows + c.unit_m() - 1) / c.unit_m();
  // The zero tail (rows past the last group) is one more group that may start mid-unit.
  const int64_t m_units_bound =
      p.kind == OperationKind::grouped_k
          ? p.groups * m_units_of_rows
          : m_units_of_rows + (p.kind == OperationKind::grouped_m || p.masked ? std::min(p.groups, p.rows) : 0) +
                (p.zero_tail ? 1 : 0);
  return std::max<int64_t>(1, m_units_bound * n_tiles);
}

std::size_t split_k_workspace_bytes(const KernelProblem& p, const KernelConfig& c, int splits) {
  if (splits <= 1) return 0;
  const int64_t slots = split_k_slots(p, c);
  const auto slot_bytes = static_cast<std::size_t>(c.warpgroup_rows()) * c.tile_n * 4;
  return split_k_flag_bytes(slots) + static_cast<std::size_t>(slots) * (splits - 1) * slot_bytes;
}

Result<kernels::sm90::GroupedGemmParams> make_params(const KernelProblem& p, const KernelConfig& c) {
  GEMMOPS_ASSIGN_OR_RETURN(const cuda::DriverApi* api, cuda::driver());
  kernels::sm90::GroupedGemmParams params{};
  const uint64_t esize = size_of(p.a->dtype);
  if (p.b->dtype != p.a->dtype)
    return unsupported("B: sm90 kernels need A and B of one dtype; got " + std::string(name(p.a->dtype)) + " and " +
                       std::string(name(p.b->dtype)));
  GEMMOPS_ASSIGN_OR_RETURN(const CUtensorMapDataType type, tma_type(p.a->dtype, "A"));
  // A gathered operand's source rows are copied 16 bytes at a time by cp.async (gather_a.cuh,
  // gather_k.cuh): its data must start on a 16-byte boundary (the strides are checked with the plan).
  auto aligned = [](const TensorDesc& t, const char* role) {
    if (t.numel() == 0 || reinterpret_cast<uintptr_t>(t.data) % 16 == 0) return Status::ok();
    return unsupported(std::string(role) + ": sm90 kernels copy a gathered operand 16 bytes at a time: its data "
                       "must be 16-byte aligned; got " + t.describe());
  };
  if (c.gather_a) GEMMOPS_TRY(aligned(*p.a, "A"));
  if (c.gather_b) GEMMOPS_TRY(aligned(*p.b, "B"));
  if (c.gather_a) {  // A's rows copied through the index (kernels/sm90/gather_a.cuh): no tensor map
    params.mainloop.a = map_address(*p.a, p);
    params.mainloop.a_row_stride = p.a_stride;
    params.mainloop.a_row_index = p.a_row_index;
  } else {  // A (rows, K): K-major boxes are (TILE_K, TILE_M); M-major boxes one 64-row M atom (64, TILE_K)
    const bool k_major = c.a_major == kernels::sm90::AMajor::k;
    const int64_t inner = map_extent(*p.a, k_major ? p.k : p.rows), outer = map_extent(*p.a, k_major ? p.rows : p.k);
    const uint64_t dims[2] = {at_least_one(inner), at_least_one(outer)};
    const uint64_t strides[1] = {stride_bytes(p.a_stride, outer, esize)};
    // (A cluster along N: each CTA loads its share of a K-major tile's rows, multicast to the others.)
    const uint32_t box[2] = {static_cast<uint32_t>(k_major ? c.tile_k : 64),
                             static_cast<uint32_t>(k_major ? c.a_rows_per_cta() : c.tile_k)};
    GEMMOPS_ASSIGN_OR_RETURN(CUtensorMap m, cuda::encode_tiled(*api, type, 2, map_address(*p.a, p), dims, strides, box,
                                                               CU_TENSOR_MAP_SWIZZLE_128B));
    store_map(m, &params.mainloop.map_a);
  }
  if (c.gather_b) {  // B's k-rows copied through the index (kernels/sm90/gather_k.cuh): no tensor map
    params.mainloop.b = map_address(*p.b, p);
    params.mainloop.b_row_stride = p.b_k_stride;
    params.mainloop.b_row_index = p.b_row_index;
  } else {  // B as (G, K, N): K-major boxes are (TILE_K, TILE_N, 1); N-major boxes one 64-wide N atom.
    // The K-grouped form's B is one (K, N) matrix: G = 1.
    const int64_t b_groups = map_extent(*p.b, p.kind == OperationKind::grouped_k ? 1 : p.groups);
    const int64_t b_k = map_extent(*p.b, p.k), b_n = map_extent(*p.b, p.n);
    const uint64_t g_stride_legal = stride_bytes(p.b_group_stride, b_groups, esize);
    void* b_address = map_address(*p.b, p);
    CUtensorMap m;
    if (c.b_major == BMajor::k) {
      const uint64_t dims[3] = {at_least_one(b_k), at_least_one(b_n), at_least_one(b_groups)};
      const uint64_t strides[2] = {stride_bytes(p.b_n_stride, b_n, esize), g_stride_legal};
      // With a cluster each CTA loads (and multicasts) its share of the tile's rows.
      // With a gated op's concatenated halves a box is half the tile (kernels/sm90/config.cuh).
      const uint32_t box[3] = {static_cast<uint32_t>(c.tile_k), static_cast<uint32_t>(c.b_box_rows()), 1};
      GEMMOPS_ASSIGN_OR_RETURN(m, cuda::encode_tiled(*api, type, 3, b_address, dims, strides, box,
                                                     CU_TENSOR_MAP_SWIZZLE_128B));
    } else {
      const uint64_t dims[3] = {at_least_one(b_n), at_least_one(b_k), at_least_one(b_groups)};
      const uint64_t strides[2] = {stride_bytes(p.b_k_stride, b_k, esize), g_stride_legal};
      const uint32_t box[3] = {64, static_cast<uint32_t>(c.tile_k), 1};
      GEMMOPS_ASSIGN_OR_RETURN(m, cuda::encode_tiled(*api, type, 3, b_address, dims, strides, box,
                                                     CU_TENSOR_MAP_SWIZZLE_128B));
    }
    store_map(m, &params.mainloop.map_b);
  }
  if (c.epilogue == 1 && c.out_m_major) {  // K-grouped out (M, N, G), M contiguous: a box is (64 M, 64 N, 1)
    const uint64_t out_esize = size_of(p.out->dtype);
    const int64_t m = p.groups > 0 ? p.out_rows / p.groups : 0;
    const uint64_t dims[3] = {at_least_one(m), at_least_one(p.n), at_least_one(p.groups)};
    const uint64_t strides[2] = {stride_bytes(p.out_row_stride, p.n, out_esize),
                                 stride_bytes(p.out_group_stride, p.groups, out_esize)};
    const uint32_t box[3] = {64, 64, 1};
    GEMMOPS_ASSIGN_OR_RETURN(const CUtensorMapDataType out_type, tma_type(p.out->dtype, "out"));
    GEMMOPS_ASSIGN_OR_RETURN(CUtensorMap m3, cuda::encode_tiled(*api, out_type, 3, p.out->data, dims, strides, box,
                                                                CU_TENSOR_MAP_SWIZZLE_128B));
    store_map(m3, &params.store.map_out);
  } else if (c.epilogue == 1 && c.op.activation_grad) {
    // out is dh (kernels/sm90/epilogue_tma.cuh): a gated activation's concatenated halves as two
    // planes I = N columns apart (each clipped at I), interleaved halves 2I columns, else I.
    const bool halves = c.op.gated_act() && c.op.gate == kernels::sm90::Gate::concatenated;
    const int64_t cols = c.op.gated_act() && !halves ? 2 * p.n : p.n;
    GEMMOPS_ASSIGN_OR_RETURN(CUtensorMap m, ragged_store_map(*api, p.out->dtype, "out", p.out->data, cols, p.out_rows,
                                                             p.out_row_stride, halves ? 2 : 1));
    store_map(m, &params.store.map_out);
  } else if (c.epilogue == 1) {  // out (out rows, N), N contiguous, as its ragged view
    const int64_t out_cols = c.op.gated() ? p.n / 2 : p.n;  // a gated op writes half the product's columns
    GEMMOPS_ASSIGN_OR_RETURN(CUtensorMap m, ragged_store_map(*api, p.out->dtype, "out", p.out->data, out_cols,
                                                             p.out_rows, p.out_row_stride));
    store_map(m, &params.store.map_out);
  }
  params.store.out = p.out->data;
  params.store.out_row_stride = p.out_row_stride;
  kernels::sm90::SchedulerParams& s = params.scheduler;
  s.offsets = p.offsets;
  s.groups = static_cast<int32_t>(p.groups);
  s.rows = static_cast<int32_t>(p.rows);
  s.rows_per_group = static_cast<int32_t>(p.rows_per_group);
  s.n = static_cast<int32_t>(p.n);
  s.k = static_cast<int32_t>(p.k);
  s.raster_band = 1;
  s.k_walk_longest_first = env::k_grouped_walk_longest_first() ? 1 : 0;
  s.table_groups = static_cast<int32_t>(p.groups) + (p.zero_tail && p.kind == OperationKind::grouped_m ? 1 : 0);
  s.group_alignment = static_cast<int32_t>(p.group_alignment);
  s.masked = p.masked ? 1 : 0;
  params.split_k.k_splits = 1;
  params.op.bias = p.bias;
  params.op.bias_group_stride = p.bias_group_stride;
  params.op.row_scale = p.row_scale;
  params.op.alpha = p.alpha;
  params.op.limit = p.limit;
  params.op.pre_activation = p.pre_activation;
  params.op.pre_activation_row_stride = p.pre_activation_row_stride;
  params.op.scaled_activation = p.scaled_activation;
  params.op.scaled_activation_row_stride = p.scaled_activation_row_stride;
  params.op.score_grad_partials = p.score_grad_partials;
  params.op.score_grad_row_stride = p.score_grad_row_stride;
  if (c.epilogue == 1 && c.op.pre_activation) {
    // h's ragged view (kernels/sm90/epilogue_tma.cuh), in out's dtype, with a fourth dimension for the
    // halves: concatenated gated halves are I = N / 2 columns each, I columns apart (clipped at I).
    const bool halves = c.op.split_b();
    const int64_t cols = halves ? p.n / 2 : p.n;
    GEMMOPS_ASSIGN_OR_RETURN(CUtensorMap m, ragged_store_map(*api, p.out->dtype, "epilogue.pre_activation",
                                                             p.pre_activation, cols, p.out_rows,
                                                             p.pre_activation_row_stride, halves ? 2 : 1));
    store_map(m, &params.map_second_out);
  }
  if (c.loads_h_by_tma()) {  // h's 2D view (kernels/sm90/epilogue_tma.cuh): 64x64 boxes, read by TMA
    const uint64_t h_esize = size_of(p.out->dtype);
    const int64_t h_cols = c.op.gated_act() ? 2 * p.n : p.n;
    const uint64_t dims[2] = {at_least_one(h_cols), at_least_one(p.out_rows)};
    const uint64_t strides[1] = {stride_bytes(p.pre_activation_row_stride, p.out_rows, h_esize)};
    const uint32_t box[2] = {64, 64};
    GEMMOPS_ASSIGN_OR_RETURN(const CUtensorMapDataType h_type,
                             tma_type(p.out->dtype, "epilogue.activation_grad.pre_activation"));
    GEMMOPS_ASSIGN_OR_RETURN(CUtensorMap m, cuda::encode_tiled(*api, h_type, 2, p.pre_activation, dims, strides, box,
                                                               CU_TENSOR_MAP_SWIZZLE_128B));
    store_map(m, &params.map_h);
  }
  if (c.epilogue == 1 && c.op.activation_grad) {  // s act(h)'s ragged view (I columns, one plane)
    GEMMOPS_ASSIGN_OR_RETURN(CUtensorMap m, ragged_store_map(*api, p.out->dtype,
                                                             "epilogue.activation_grad.scaled_activation",
                                                             p.scaled_activation, p.n, p.out_rows,
                                                             p.scaled_activation_row_stride, 1));
    store_map(m, &params.map_second_out);
  }
  params.scales.a = p.a_scales;
  params.scales.b = p.b_scales;
  params.scales.a_row_stride = static_cast<int32_t>(p.a_scale_row_stride);  // (fp8_scales.cpp checks the range)
  params.scales.b_group_stride = static_cast<int32_t>(p.b_scale_group_stride);
  return params;
}

Result<LaunchShape> prepare_launch(const KernelProblem& p, const KernelConfig& c, const cuda::LazyModule& module,
                                   const std::string& lowered_name, int splits) {
  LaunchShape shape;
  shape.ordinal = p.a->device.index;
  // More groups than a launch's scheduler table holds run as launches of chunks of groups, in
  // order on the stream; no host synchronisation (group_chunks.hpp).
  const std::vector<GroupChunk> chunks = group_chunks(p, c);
  if (p.rows == 0 || p.n == 0 || chunks.empty()) return shape;
  GEMMOPS_TRY(cuda::make_current(shape.ordinal));
  GEMMOPS_ASSIGN_OR_RETURN(const cuda::DriverApi* api, cuda::driver());
  GEMMOPS_ASSIGN_OR_RETURN(cuda::DeviceFacts facts, cuda::device_facts(shape.ordinal));
  GEMMOPS_ASSIGN_OR_RETURN(shape.fn, module.function(shape.ordinal, lowered_name));
  // Every launch's table must fit before any runs: a refusal never leaves out half written.
  for (const GroupChunk& chunk : chunks) {
    const int smem = c.smem_bytes(static_cast<int>(chunk.table_groups()));
    if (static_cast<std::size_t>(smem) > facts.smem_per_block_optin)
      return unsupported("B: G = " + std::to_string(chunk.count) + " needs " + std::to_string(smem) +
                         " bytes of shared memory; device " + std::to_string(shape.ordinal) + " allows " +
                         std::to_string(facts.smem_per_block_optin));
  }
  const int64_t sms = std::min<int64_t>(facts.sm_count, env::max_sms().value_or(facts.sm_count));
  for (const GroupChunk& chunk : chunks) {
    ChunkLaunch launch;
    launch.chunk = chunk;
    launch.smem_bytes = static_cast<unsigned>(c.smem_bytes(static_cast<int>(chunk.table_groups())));
    // Persistent grid: at most one CTA per SM, and no more scheduler units than there can be. A
    // unit is one tile per CTA of a cluster (one part of K of it with split-K).
    const int64_t units_bound = max_scheduler_units(chunk_problem(p, chunk), c) * std::max(1, splits);
    int64_t resident = std::max<int64_t>(1, sms / c.cluster_size());
    if (c.cluster_size() > 1) {
      // A cluster that cannot be resident with the others would run after them: a whole extra wave.
      cuda::LaunchConfig lc;
      lc.cluster[0] = static_cast<unsigned>(c.cluster_size());
      lc.block[0] = static_cast<unsigned>(c.threads());
      lc.smem_bytes = launch.smem_bytes;
      lc.grid[0] = static_cast<unsigned>(resident * c.cluster_size());
      GEMMOPS_ASSIGN_OR_RETURN(int active, cuda::max_active_clusters(*api, shape.fn, lc));
      if (active > 0) resident = std::min<int64_t>(resident, active);
    }
    launch.clusters = std::min<int64_t>(resident, units_bound);
    launch.raster_band = raster_band(c, launch.clusters * c.tiles_in_flight());
    shape.chunks.push_back(launch);
  }
  return shape;
}

Status launch_grouped(const KernelProblem& p, const KernelConfig& c, const LaunchShape& shape, Stream stream,
                      int splits, Workspace workspace, bool programmatic) {
  if (shape.chunks.empty()) return Status::ok();
  GEMMOPS_TRY(cuda::make_current(shape.ordinal));
  GEMMOPS_ASSIGN_OR_RETURN(const cuda::DriverApi* api, cuda::driver());
  GEMMOPS_ASSIGN_OR_RETURN(kernels::sm90::GroupedGemmParams params, make_params(p, c));
  int64_t split_k_slot_count = 0;
  if (splits > 1) {
    const std::size_t need = split_k_workspace_bytes(p, c, splits);
    if (workspace.data == nullptr || workspace.bytes < need)
      return invalid_argument("workspace: split-K " + std::to_string(splits) + " ways needs " + std::to_string(need) +
                              " bytes; got " + std::to_string(workspace.data ? workspace.bytes : 0));
    split_k_slot_count = split_k_slots(p, c);
    auto* base = static_cast<unsigned char*>(workspace.data);
    params.split_k.k_splits = splits;
    params.split_k.split_flags = reinterpret_cast<int32_t*>(base);
    params.split_k.partials = reinterpret_cast<float*>(base + split_k_flag_bytes(split_k_slot_count));
  }
  const std::optional<int> band = env::raster_band();
  for (const ChunkLaunch& launch : shape.chunks) {
    apply_chunk(p, launch.chunk, &params.scheduler);
    // Each launch counts its tiles' partials from zero (a chunk's units fit the whole problem's slots).
    if (splits > 1)
      GEMMOPS_CU(*api, cuMemsetD8Async, reinterpret_cast<CUdeviceptr>(params.split_k.split_flags), 0,
                 split_k_flag_bytes(split_k_slot_count), static_cast<CUstream>(stream));
    cuda::LaunchConfig lc;
    lc.cluster[0] = static_cast<unsigned>(c.cluster_size());
    lc.block[0] = static_cast<unsigned>(c.threads());
    lc.smem_bytes = launch.smem_bytes;
    lc.grid[0] = static_cast<unsigned>(launch.clusters * c.cluster_size());
    params.scheduler.raster_band = band.value_or(launch.raster_band);
    lc.stream = static_cast<CUstream>(stream);
    lc.programmatic_serialization = programmatic && splits <= 1;
    void* kernel_args[] = {&params};
    GEMMOPS_TRY(cuda::launch(*api, shape.fn, lc, kernel_args));
  }
  return Status::ok();
}

}  // namespace gemmops::sm90
