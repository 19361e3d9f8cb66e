// src/simt/grouped_gemm.cpp: metadata, support, compile (NVRTC per architecture) and launch of the
// portable grouped GEMM
// SPDX-License-Identifier: Apache-2.0
#include "simt/grouped_gemm.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>

#include "core/env.hpp"
#include "cuda/context.hpp"
#include "cuda/device.hpp"
#include "cuda/driver_api.hpp"
#include "cuda/launch.hpp"
#include "simt/arch_modules.hpp"
#include "simt/launch_plan.hpp"
#include "simt/elem_text.hpp"

namespace gemmops::simt {
namespace {

namespace k = kernels::simt;

constexpr int kMinCc = 80;  // cvt.rn.bf16.f32; and the target every device here can run
// The estimate is a fallback's: pessimistic on purpose, so that it ranks after every sm90 operator
// serving the same arguments, even a design whose tiles waste most of their rows on tiny groups. A
// pass is one block over one 64 x 64 tile of one group: a fixed cost plus its K at a 132nd of
// ~15 TFLOP/s. Passes run one per SM at a time, and no faster than the longest block's passes.
constexpr double kLaunchUs = 20.0;               // launch and the offset scans of the grouped forms
constexpr double kSms = 132;                     // an H100/H200 (fewer on smaller parts)
constexpr double kPassUs = 20.0;                 // loads, stores and barriers of one pass
constexpr double kPassFlopsPerUs = 15e6 / kSms;  // fp32 FMA of one pass
constexpr double kBytesPerUs = 1.5e6;            // 1.5 TB/s of compulsory traffic

// The kernels' forms, in the order of their name expressions and lowered names: index = the value.
constexpr k::Form kForms[] = {k::Form::dense, k::Form::grouped_m, k::Form::grouped_k, k::Form::grouped_n,
                              k::Form::grouped_m_masked};

const char* form_text(k::Form f) {
  switch (f) {
    case k::Form::dense: return "Form::dense";
    case k::Form::grouped_m: return "Form::grouped_m";
    case k::Form::grouped_k: return "Form::grouped_k";
    case k::Form::grouped_n: return "Form::grouped_n";
    case k::Form::grouped_m_masked: return "Form::grouped_m_masked";
  }
  return "Form::dense";
}

std::string instantiation_text(k::Form form, DType ab, DType out) {
  const std::string ns = "gemmops::kernels::simt::";
  return ns + "simt_gemm_kernel<" + ns + form_text(form) + ", " + ns + elem_text(ab) + ", " + ns + elem_text(out) +
         ">";
}

/// What an artifact holds: the kernels of all forms, compiled per device architecture.
struct SimtArtifact final : ArtifactImpl {
  explicit SimtArtifact(jit::CompileRequest request) : modules(std::move(request)) {}
  ArchModules modules;
};

// The architecture compile() builds for: A's device when the driver sees one it serves, else the
// one GEMMOPS_TARGET stands in for, else the oldest one served. run() builds for each device's own.
int compile_cc(const Arguments& args) {
  if (auto facts = cuda::device_facts(operand_a(args).device.index); facts && facts->cc >= kMinCc) return facts->cc;
  if (auto text = env::target()) {
    if (auto t = Target::parse(*text); t && !t->is_cpu() && t->cc >= kMinCc) return t->cc;
  }
  return kMinCc;
}

// Kernels load and store whole elements: a pointer off its element's alignment would fault.
Status check_element_alignment(const TensorDesc& t, const char* role) {
  const auto size = static_cast<uintptr_t>(size_of(t.dtype));
  const auto off = reinterpret_cast<uintptr_t>(t.data) % size;
  if (off == 0) return Status::ok();
  return unsupported(std::string(role) + ": data pointer must be aligned to its " + std::to_string(size) +
                     "-byte elements; got an address " + std::to_string(off) + " bytes past a boundary");
}

}  // namespace

Design simt_design() {
  Design d;
  d.tile_m = k::kTileM, d.tile_n = k::kTileN, d.tile_k = k::kTileK;
  d.schedule = Schedule::simt;
  return d;
}

OperatorMetadata SimtGemmOperator::make_metadata(DType ab, DType out) {
  OperatorMetadata m;
  m.target = Target::sm(kMinCc);  // not arch-specific: runs on 8.0 and every later device
  m.provider = "simt";
  m.design = simt_design();
  m.name = make_operator_name(m.target, "grouped_gemm", ab, out, DType::fp32, m.design);
  auto& c = m.constraints;
  c.kinds = {OperationKind::gemm,      OperationKind::batched_gemm, OperationKind::grouped_m,
             OperationKind::grouped_k, OperationKind::grouped_n,    OperationKind::grouped_m_masked};
  // M-grouped groups at aligned starts (group_alignment), padding untouched; with the masked form
  // through the GPU suite and memcheck on an H100 (2026-12-06).
  c.aligned_groups = true;
  c.a_dtypes = {ab};
  c.b_dtypes = {ab};
  c.out_dtypes = {out};
  c.accumulator_dtypes = {DType::fp32};
  c.a_b_same_dtype = true;
  c.device = Device::Kind::cuda;  // any majors, any strides, element-aligned pointers (supports_extra)
  c.epilogue = EpilogueSupport{};  // only the empty epilogue
  return m;
}

SimtGemmOperator::SimtGemmOperator(DType ab, DType out) : Operator(make_metadata(ab, out)), ab_(ab), out_(out) {}

Status SimtGemmOperator::supports_extra(const Arguments& args, const Target&) const {
  GEMMOPS_TRY(check_element_alignment(operand_a(args), "A"));
  GEMMOPS_TRY(check_element_alignment(operand_b(args), "B"));
  GEMMOPS_TRY(check_element_alignment(operand_out(args), "out"));
  if (const auto* g = std::get_if<GroupedGemmArguments>(&args)) GEMMOPS_TRY(check_element_alignment(g->offsets, "offsets"));
  return plan_launch(args).status();
}

jit::CompileRequest compile_request(const std::string& kernel_name, DType ab, DType out) {
  jit::CompileRequest req;
  req.kernel_name = kernel_name;
  req.source = "#include \"simt/grouped_gemm.cuh\"\n";
  for (k::Form f : kForms) req.name_expressions.push_back(instantiation_text(f, ab, out));
  // 2 blocks of 256 threads per SM allow 128 registers each; a spill would be a silent slowdown,
  // so ptxas says so in the log (the compile tests fail on it).
  req.options.push_back("--ptxas-options=--warn-on-spills");
  return req;
}

Result<Artifact> SimtGemmOperator::do_compile(const Arguments& args) const {
  auto impl = std::make_shared<SimtArtifact>(compile_request(name(), ab_, out_));
  const int cc = compile_cc(args);
  GEMMOPS_ASSIGN_OR_RETURN(std::shared_ptr<const ArchModule> first, impl->modules.for_cc(cc));
  std::string description = impl->modules.request().name_expressions[0] + " and the other forms for sm_" +
                            std::to_string(cc) + " (cubin from " + first->compiled->origin +
                            "; other devices compile their own on first run)";
  if (!first->compiled->log.empty()) description += "; nvrtc log: " + first->compiled->log;
  return Artifact(name(), std::move(impl), std::move(description));
}

Status SimtGemmOperator::do_run(const Arguments& args, const Artifact& artifact, Stream stream, Workspace) const {
  GEMMOPS_ASSIGN_OR_RETURN(LaunchPlan plan, plan_launch(args));
  if (!plan.launch) return Status::ok();
  const int ordinal = operand_a(args).device.index;
  GEMMOPS_TRY(cuda::make_current(ordinal));
  GEMMOPS_ASSIGN_OR_RETURN(const cuda::DriverApi* api, cuda::driver());
  GEMMOPS_ASSIGN_OR_RETURN(cuda::DeviceFacts facts, cuda::device_facts(ordinal));
  if (facts.cc < kMinCc)
    return unsupported("A: simt kernels need a device of compute capability 8.0 or later; device " +
                       std::to_string(ordinal) + " is " + std::to_string(facts.cc / 10) + "." +
                       std::to_string(facts.cc % 10));
  GEMMOPS_ASSIGN_OR_RETURN(std::shared_ptr<const ArchModule> arch,
                           artifact.get<SimtArtifact>()->modules.for_cc(facts.cc));
  const auto form = static_cast<std::size_t>(plan.form);
  if (arch->compiled->lowered_names.size() <= form)
    return internal_error("artifact: " + name() + " has no kernel for form " + std::to_string(form));
  GEMMOPS_ASSIGN_OR_RETURN(CUfunction fn, arch->module.function(ordinal, arch->compiled->lowered_names[form]));
  cuda::LaunchConfig lc;
  lc.grid[0] = plan.grid_x;
  lc.grid[1] = plan.grid_y;
  lc.block[0] = static_cast<unsigned>(k::kThreads);
  lc.stream = static_cast<CUstream>(stream);
  void* kernel_args[] = {&plan.params};
  return cuda::launch(*api, fn, lc, kernel_args);
}

double estimate_time_us(const Arguments& args) {
  auto shape = problem_shape(args);
  if (!shape) return 1e30;
  const TensorDesc &A = operand_a(args), &B = operand_b(args), &out = operand_out(args);
  auto tiles = [](double extent, double tile) { return std::ceil(extent / tile); };
  const double rows = double(out.size(-2)), cols = double(out.size(-1)), groups = double(shape->groups);
  const double K = double(shape->k), tiles_m = tiles(rows, k::kTileM), tiles_n = tiles(cols, k::kTileN);
  double passes = tiles_m * tiles_n * groups;  // dense and K-grouped: every group has every tile
  double k_summed = passes * K;                // K-grouped: the groups of a tile share TotalK
  double longest_passes = 1, longest_k = K;    // the passes of the busiest block, and their K
  switch (shape->kind) {
    case OperationKind::gemm:
    case OperationKind::batched_gemm:
    case OperationKind::grouped_m_masked: break;  // every group has every tile of (MaxM, N): an upper bound
    case OperationKind::grouped_k:
      k_summed = tiles_m * tiles_n * K;
      break;  // one group may hold all of TotalK: longest_k = K
    case OperationKind::grouped_m:  // a tile walks its groups one after the other
      passes = (tiles_m + std::min(groups, rows)) * tiles_n;
      k_summed = passes * K;
      longest_passes = std::min({groups, rows, double(k::kTileM), std::ceil(groups / tiles_m) + 1});
      longest_k = longest_passes * K;
      break;
    case OperationKind::grouped_n:
      passes = tiles_m * (tiles_n + std::min(groups, cols));
      k_summed = passes * K;
      longest_passes = std::min({groups, cols, double(k::kTileN), std::ceil(groups / tiles_n) + 1});
      longest_k = longest_passes * K;
      break;
  }
  const double pass_k_us = 2.0 * k::kTileM * k::kTileN / kPassFlopsPerUs;  // per unit of K
  const double spread_us = std::ceil(passes / kSms) * kPassUs + k_summed * pass_k_us / kSms;
  const double longest_us = longest_passes * kPassUs + longest_k * pass_k_us;
  const double bytes = double(A.numel()) * double(size_of(A.dtype)) + double(B.numel()) * double(size_of(B.dtype)) +
                       double(out.numel()) * double(size_of(out.dtype));
  return kLaunchUs + (passes > 0 ? std::max(spread_us, longest_us) : 0.0) + bytes / kBytesPerUs;
}

double SimtGemmOperator::do_estimated_time_us(const Arguments& args, const Target&) const {
  return estimate_time_us(args);
}

}  // namespace gemmops::simt
