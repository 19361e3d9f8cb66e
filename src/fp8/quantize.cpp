// src/fp8/quantize.cpp: quantize_fp8() on the host (cpu/quantize.cpp) or on a CUDA device (kernels of
// kernels/fp8/quantize.cuh, compiled per input dtype and vector width on first use)
// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "cpu/quantize.hpp"
#include "cuda/context.hpp"
#include "cuda/device.hpp"
#include "cuda/driver_api.hpp"
#include "cuda/launch.hpp"
#include "fp8/quantize_kernels.hpp"
#include "fp8/quantize_params.cuh"
#include "fp8/quantize_rules.hpp"
#include "simt/arch_modules.hpp"

namespace gemmops {
namespace {

namespace k = kernels::fp8;
using fp8::QuantizeStep;

constexpr int kMinCc = 89;  // cvt.rn.satfinite.e4m3x2.f32

const simt::ArchModules& modules_for(DType in, int vec) {
  static std::mutex mutex;
  static std::map<std::pair<DType, int>, std::unique_ptr<simt::ArchModules>> cache;
  std::lock_guard lock(mutex);
  auto& slot = cache[{in, vec}];
  if (!slot) slot = std::make_unique<simt::ArchModules>(fp8::quantize_request(in, vec));
  return *slot;
}

int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

/// The parameters of every step but the tiling, which launch_step sets.
k::QuantizeParams params_of(const TensorDesc& x, const TensorDesc& q, const OperandScales& s) {
  k::QuantizeParams p{};
  const bool stacked = x.rank() == 3;
  p.x = x.data;
  p.q = static_cast<unsigned char*>(q.data);
  p.scales = static_cast<float*>(s.scales.data);
  p.instances = stacked ? x.size(0) : 1;
  p.rows = x.size(-2);
  p.cols = x.size(-1);
  for (int d = 0; d < 3; ++d) {
    const int from = d - (stacked ? 0 : 1);  // a matrix has no instance dimension: stride 0
    p.x_strides[d] = from >= 0 ? x.stride(from) : 0;
    p.q_strides[d] = from >= 0 ? q.stride(from) : 0;
  }
  // As detail::scale_offset indexes them: the leading dimension only when stacked.
  const TensorDesc& t = s.scales;
  p.s_strides[0] = stacked ? t.stride(0) : 0;
  switch (s.granularity) {
    case ScaleGranularity::tensor: break;
    case ScaleGranularity::row: p.s_strides[1] = t.stride(stacked ? 1 : 0); break;
    case ScaleGranularity::block_1x128:
    case ScaleGranularity::block_128x128:
      p.s_strides[1] = t.stride(-2);
      p.s_strides[2] = t.stride(-1);
      break;
  }
  return p;
}

class DeviceQuantizer {
 public:
  DeviceQuantizer(const cuda::DriverApi& api, const simt::ArchModule& arch, int ordinal, int sm_count, CUstream stream)
      : api_(api), arch_(arch), ordinal_(ordinal), sm_count_(sm_count), stream_(stream) {}

  /// One launch of `step` over tiles of `tile_rows` x (128 columns, or all for row scales);
  /// nothing when there is no tile. The zero and scale steps of tensor scales run over instances.
  Status launch_step(QuantizeStep step, k::QuantizeParams p, int64_t tile_rows) const {
    const bool over_instances = step == QuantizeStep::tensor_zero || step == QuantizeStep::tensor_scale;
    p.row_tiles = ceil_div(p.rows, tile_rows);
    p.col_tiles = step == QuantizeStep::row ? 1 : ceil_div(p.cols, k::kBlockCols);
    p.tiles = p.instances * p.row_tiles * p.col_tiles;
    const int64_t blocks = over_instances ? ceil_div(p.instances, k::kThreads) : p.tiles;
    if (blocks == 0) return Status::ok();
    const std::string& name = arch_.compiled->lowered_names.at(static_cast<std::size_t>(step));
    GEMMOPS_ASSIGN_OR_RETURN(CUfunction fn, arch_.module.function(ordinal_, name));
    cuda::LaunchConfig lc;
    // Up to a full wave of 256-thread blocks (8 an SM); further tiles are taken grid-strided.
    lc.grid[0] = static_cast<unsigned>(std::min<int64_t>(blocks, int64_t{sm_count_} * 8));
    lc.block[0] = k::kThreads;
    lc.stream = stream_;
    void* params[] = {&p};
    return cuda::launch(api_, fn, lc, params);
  }

 private:
  const cuda::DriverApi& api_;
  const simt::ArchModule& arch_;
  int ordinal_, sm_count_;
  CUstream stream_;
};

Status quantize_on_device(const TensorDesc& x, const TensorDesc& q, const OperandScales& s, Stream stream) {
  const int ordinal = x.device.index;
  GEMMOPS_TRY(cuda::make_current(ordinal));
  GEMMOPS_ASSIGN_OR_RETURN(const cuda::DriverApi* api, cuda::driver());
  GEMMOPS_ASSIGN_OR_RETURN(cuda::DeviceFacts facts, cuda::device_facts(ordinal));
  if (facts.cc < kMinCc) {
    return unsupported("x: quantize_fp8 on a CUDA device needs compute capability 8.9 or later (e4m3 conversion); "
                       "device " + std::to_string(ordinal) + " is " + std::to_string(facts.cc / 10) + "." +
                       std::to_string(facts.cc % 10));
  }
  const int vec = fp8::quantize_vector_width(x, q);
  GEMMOPS_ASSIGN_OR_RETURN(std::shared_ptr<const simt::ArchModule> arch, modules_for(x.dtype, vec).for_cc(facts.cc));
  const DeviceQuantizer run(*api, *arch, ordinal, facts.sm_count, static_cast<CUstream>(stream));
  const k::QuantizeParams p = params_of(x, q, s);
  switch (s.granularity) {
    case ScaleGranularity::block_1x128: return run.launch_step(QuantizeStep::block_1x128, p, k::kRowTileRows);
    case ScaleGranularity::block_128x128: return run.launch_step(QuantizeStep::block_128x128, p, k::kBlockTileRows);
    case ScaleGranularity::row: return run.launch_step(QuantizeStep::row, p, k::kRowsPerPass);
    case ScaleGranularity::tensor:
      // The amax of an instance spans many tiles: gathered into its scale slot across launches.
      GEMMOPS_TRY(run.launch_step(QuantizeStep::tensor_zero, p, k::kBlockTileRows));
      GEMMOPS_TRY(run.launch_step(QuantizeStep::tensor_amax, p, k::kBlockTileRows));
      GEMMOPS_TRY(run.launch_step(QuantizeStep::tensor_apply, p, k::kBlockTileRows));
      return run.launch_step(QuantizeStep::tensor_scale, p, k::kBlockTileRows);
  }
  return internal_error("scales: unknown granularity");
}

const char* elem_text(DType t) { return t == DType::bf16 ? "Elem::bf16" : "Elem::fp32"; }

}  // namespace

namespace fp8 {
namespace {

/// Whether `t` (rank 2 or 3) can be read or written `vec` elements at a time: columns contiguous,
/// every row and instance starting on a vector boundary.
bool vectorisable(const TensorDesc& t, int vec) {
  const auto bytes = static_cast<int64_t>(size_of(t.dtype)) * vec;
  if (reinterpret_cast<uintptr_t>(t.data) % static_cast<uintptr_t>(bytes) != 0) return false;
  if (t.size(-1) % vec != 0 || (t.size(-1) > 1 && t.stride(-1) != 1)) return false;
  for (int d = 0; d < t.rank() - 1; ++d) {
    if (t.size(d) > 1 && t.stride(d) % vec != 0) return false;
  }
  return true;
}

}  // namespace

int quantize_vector_width(const TensorDesc& x, const TensorDesc& q) {
  for (int vec = x.dtype == DType::fp32 ? 4 : 8; vec > 1; vec /= 2) {
    if (vectorisable(x, vec) && vectorisable(q, vec)) return vec;
  }
  return 1;
}

bool is_quantize_vector_width(DType in, int vec) {
  return vec == 1 || vec == 2 || vec == 4 || (vec == 8 && in == DType::bf16);
}

jit::CompileRequest quantize_request(DType in, int vec) {
  jit::CompileRequest req;
  req.kernel_name = "fp8_quantize";
  req.source = "#include \"fp8/quantize.cuh\"\n";
  const std::string ns = "gemmops::kernels::fp8::";
  static const char* const kSteps[kQuantizeSteps] = {"block_1x128", "block_128x128", "row",         "tensor_zero",
                                                     "tensor_amax", "tensor_apply",  "tensor_scale"};
  for (const char* step : kSteps) {
    req.name_expressions.push_back(ns + "quantize_kernel<" + ns + elem_text(in) + ", " + std::to_string(vec) + ", " +
                                   ns + "Step::" + step + ">");
  }
  // A spill would be a silent slowdown: ptxas says so in the log, which the compile tests read.
  req.options.push_back("--ptxas-options=--warn-on-spills");
  return req;
}

}  // namespace fp8

Status quantize_fp8(const TensorDesc& x, const TensorDesc& q, const OperandScales& scales, Stream stream) {
  GEMMOPS_TRY(fp8::validate_quantize(x, q, scales));
  GEMMOPS_TRY(fp8::validate_quantize_data(x, q, scales));
  if (x.device.is_cuda()) return quantize_on_device(x, q, scales, stream);
  return cpu::quantize_on_host(x, q, scales, fp8::quantize_geometry(x));
}

}  // namespace gemmops
