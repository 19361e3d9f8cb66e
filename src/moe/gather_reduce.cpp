// src/moe/gather_reduce.cpp: gather_reduce() on the host (a loop) or on a CUDA device (one kernel,
// kernels/moe/gather_reduce.cuh, compiled per element types and vector width on first use)
// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

#include "cpu/element_io.hpp"
#include "cuda/launch.hpp"
#include "gemmops/moe.hpp"
#include "moe/gather_reduce_kernels.hpp"
#include "moe/gather_reduce_params.cuh"
#include "moe/moe_device.hpp"
#include "moe/moe_rules.hpp"
#include "simt/arch_modules.hpp"
#include "simt/elem_text.hpp"

namespace gemmops {
namespace {

namespace k = kernels::moe;
using simt::elem_text;

/// The host's loop: the kernel's arithmetic (one fma per choice, in choice order) element by element.
void gather_reduce_on_host(const GatherReduceArguments& a) {
  const int64_t tokens = a.out.size(0), h = a.out.size(1), k = a.pair_rows.size(1);
  int64_t limit = a.rows.size(0);
  if (a.row_limit) limit = std::min<int64_t>(limit, *static_cast<const int32_t*>(a.row_limit->data));
  const auto* pair = static_cast<const int32_t*>(a.pair_rows.data);
  const auto* scores = a.scores ? static_cast<const float*>(a.scores->data) : nullptr;
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t c = 0; c < h; ++c) {
      float acc = 0.0f;
      for (int64_t j = 0; j < k; ++j) {
        const int64_t row = pair[t * k + j];
        if (row < 0 || row >= limit) continue;
        const float v =
            cpu::load_float(static_cast<const std::byte*>(a.rows.data), a.rows.dtype, row * a.rows.stride(0) + c);
        acc = scores ? std::fma(scores[t * k + j], v, acc) : acc + v;
      }
      cpu::store_float(static_cast<std::byte*>(a.out.data), a.out.dtype, t * a.out.stride(0) + c, acc);
    }
  }
}

/// 16-byte vectors when every row of rows and out starts on a 16-byte boundary, else one element.
int vector_width(const GatherReduceArguments& a) {
  const int width = a.rows.dtype == DType::fp32 ? 4 : 8;
  auto aligned = [&](const TensorDesc& t) {
    const auto bytes = static_cast<int64_t>(size_of(t.dtype));
    return reinterpret_cast<uintptr_t>(t.data) % static_cast<uintptr_t>(width * bytes) == 0 &&
           (t.size(0) <= 1 || t.stride(0) % width == 0);
  };
  return a.out.size(1) % width == 0 && aligned(a.rows) && aligned(a.out) ? width : 1;
}

/// The kernels of one (rows dtype, out dtype, vector width), compiled per architecture on first use.
const simt::ArchModules& modules_for(DType in, DType out, int vec) {
  static std::mutex mutex;
  static std::map<std::tuple<DType, DType, int>, std::unique_ptr<simt::ArchModules>> cache;
  std::lock_guard lock(mutex);
  auto& slot = cache[{in, out, vec}];
  if (!slot) slot = std::make_unique<simt::ArchModules>(moe::gather_reduce_request(in, out, vec));
  return *slot;
}

Status gather_reduce_on_device(const GatherReduceArguments& a, Stream stream) {
  const int ordinal = a.rows.device.index;
  GEMMOPS_ASSIGN_OR_RETURN(const moe::MoeDevice device, moe::moe_device(ordinal, "rows", "gather_reduce"));
  const cuda::DriverApi* api = device.api;
  const cuda::DeviceFacts& facts = device.facts;
  const int vec = vector_width(a);
  GEMMOPS_ASSIGN_OR_RETURN(std::shared_ptr<const simt::ArchModule> arch,
                           modules_for(a.rows.dtype, a.out.dtype, vec).for_cc(facts.cc));
  const std::size_t which = a.scores ? 1 : 0;
  GEMMOPS_ASSIGN_OR_RETURN(CUfunction fn, arch->module.function(ordinal, arch->compiled->lowered_names.at(which)));
  k::GatherReduceParams p{};
  p.rows = a.rows.data;
  p.pair = static_cast<const int*>(a.pair_rows.data);
  p.scores = a.scores ? static_cast<const float*>(a.scores->data) : nullptr;
  p.row_limit = a.row_limit ? static_cast<const int*>(a.row_limit->data) : nullptr;
  p.out = a.out.data;
  p.row_stride = a.rows.size(0) > 1 ? a.rows.stride(0) : 0;
  p.out_stride = a.out.size(0) > 1 ? a.out.stride(0) : 0;
  p.rows_count = static_cast<int>(a.rows.size(0));
  p.tokens = static_cast<int>(a.out.size(0));
  p.k = static_cast<int>(a.pair_rows.size(1));
  p.h = static_cast<int>(a.out.size(1));
  cuda::LaunchConfig lc;
  // A block per token up to a few waves of blocks; later tokens are taken grid-strided.
  lc.grid[0] = static_cast<unsigned>(std::min<int64_t>(p.tokens, int64_t{facts.sm_count} * 16));
  lc.block[0] = k::kThreads;
  lc.stream = static_cast<CUstream>(stream);
  void* params[] = {&p};
  return cuda::launch(*api, fn, lc, params);
}

}  // namespace

namespace moe {

jit::CompileRequest gather_reduce_request(DType in, DType out, int vec) {
  jit::CompileRequest req;
  req.kernel_name = "moe_gather_reduce";
  req.source = "#include \"moe/gather_reduce.cuh\"\n";
  const std::string ns = "gemmops::kernels::moe::";
  for (const char* scaled : {"false", "true"}) {
    req.name_expressions.push_back(ns + "gather_reduce_kernel<" + ns + elem_text(in) + ", " + ns + elem_text(out) +
                                   ", " + std::to_string(vec) + ", " + scaled + ">");
  }
  // A spill would be a silent slowdown: ptxas says so in the log, which the compile tests read.
  req.options.push_back("--ptxas-options=--warn-on-spills");
  return req;
}

}  // namespace moe

Status gather_reduce(const GatherReduceArguments& a, Stream stream) {
  GEMMOPS_TRY(validate(a));
  // Run needs data (fake tensors are for validate()).
  GEMMOPS_TRY(moe::refuse_fakes({{&a.rows, "rows"}, {&a.pair_rows, "pair_rows"}, {&a.out, "out"},
                                 {a.scores ? &*a.scores : nullptr, "scores"},
                                 {a.row_limit ? &*a.row_limit : nullptr, "row_limit"}}));
  if (a.out.numel() == 0) return Status::ok();
  if (!a.rows.device.is_cuda()) {
    gather_reduce_on_host(a);
    return Status::ok();
  }
  return gather_reduce_on_device(a, stream);
}

}  // namespace gemmops
