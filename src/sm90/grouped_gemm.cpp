// src/sm90/grouped_gemm.cpp: metadata, support, compile (NVRTC) and launch of the Hopper grouped GEMM
// SPDX-License-Identifier: Apache-2.0
#include "sm90/grouped_gemm.hpp"

#include <memory>
#include <string>

#include "cuda/module.hpp"
#include "jit/compile.hpp"
#include "sm90/epilogue_support.hpp"
#include "sm90/fp8_scales.hpp"
#include "sm90/kernel_compile.hpp"
#include "sm90/kernel_config.hpp"
#include "sm90/kernel_problem.hpp"
#include "sm90/launch_grouped.hpp"
#include "sm90/machine_models.hpp"
#include "sm90/machine_of_device.hpp"
#include "sm90/plan.hpp"

namespace gemmops::sm90 {
namespace {

OperatorMetadata make_metadata(const Sm90Design& d, DType ab, DType out) {
  OperatorMetadata m;
  m.target = Target::sm(90, true);
  m.provider = "sm90";
  m.design = d.design;
  m.trial = d.trial;
  m.name = make_operator_name(m.target, "grouped_gemm", ab, out, DType::fp32, d.design);
  auto& c = m.constraints;
  if (ab == DType::e4m3) {  // the fp8 main loop (fp8_scales.cpp)
    set_fp8_constraints(c);
    return m;
  }
  c.kinds = {OperationKind::grouped_m, OperationKind::gemm, OperationKind::batched_gemm};
  // Consumers of 192 accumulators a thread leave the producer 24 registers (grouped_gemm.cuh), too
  // few for the K-grouped walk (its producer spilled): such a design serves the M-grouped forms only,
  // as does one with a cluster along N (its rule: cluster_n_refusal).
  const KernelConfig k_grouped = make_kernel_config(d, ab, out, Major::mn, Major::mn, true);
  if (!k_grouped.wide_accumulators() && cluster_n_refusal(k_grouped).empty())
    c.kinds.push_back(OperationKind::grouped_k);
  c.kinds.push_back(OperationKind::grouped_m_masked);
  c.aligned_groups = true;  // the scheduler places aligned and masked groups (tile_scheduler.cuh)
  // The aligned layout, a gathered A and operands gathered along K passed the GPU suite and
  // memcheck on an H100 (2026-12-06, third call): offered. The plan refuses what they do not serve
  // (kernel_config.cpp, kernel_problem.cpp; a cluster along N, which shares A by TMA multicast,
  // gathers no rows: gather_a_refusal says so, as for a design whose registers cannot).
  c.a_row_index = true;
  c.a_k_index = c.b_k_index = true;
  c.a_dtypes = {ab};
  c.b_dtypes = {ab};
  c.out_dtypes = {out};
  c.accumulator_dtypes = {DType::fp32};
  c.a_b_same_dtype = true;
  c.a_majors = {Major::k, Major::mn};
  c.b_majors = {Major::k, Major::mn};
  c.out_row_major = true;
  // K-grouped out stored M-major by the TMA epilogue (epilogue_tma.cuh): passed the GPU suite (42
  // cases) and memcheck on an H100 (2026-12-07, tree 92d476d): offered. The plan refuses it on
  // direct-store designs with the reason.
  c.k_grouped_out_m_major = true;
  c.alignment_bytes = 16;  // TMA: base addresses and strides in multiples of 16 bytes
  c.device = Device::Kind::cuda;
  // The fused epilogue ops this design's kernels serve (epilogue_support.cpp says why not others).
  const Sm90EpilogueSupport ops = epilogue_support(d, out);
  for (Activation a : ops.activations)
    if (a != Activation::none) c.epilogue.activations.push_back(a);
  c.epilogue.gate_layouts = ops.gate_layouts;
  c.epilogue.bias = !ops.bias_dtypes.empty();
  c.epilogue.row_scale = ops.row_scale;
  c.epilogue.pre_activation = ops.pre_activation;
  c.epilogue.activation_grad = ops.activation_grad;
  // The direct store's second operands (pre_activation, activation_grad) passed the GPU suite and
  // memcheck on an H100 (2026-12-06): offered; the TMA store's pre-activation too (2026-12-07,
  // second run). The TMA store's backward: a trial (epilogue_support.hpp says why).
  c.epilogue.trial_pre_activation = ops.trial_pre_activation;
  c.epilogue.trial_activation_grad = ops.trial_activation_grad;
  return m;
}

/// What an artifact holds: the cubin (loaded per device on first run) and the kernel it names.
struct Sm90Artifact final : ArtifactImpl {
  KernelConfig config;
  std::shared_ptr<const jit::CompiledKernel> compiled;
  std::unique_ptr<cuda::LazyModule> module;
  bool programmatic_launch = false;  ///< compiled with GEMMOPS_PDL (kernel_compile.hpp)
};

// One artifact serves every size of one layout: the kernel is compiled for A's and B's majors and
// for the grouped dimension.
Status check_artifact_fits(const KernelConfig& compiled, const KernelConfig& wanted) {
  using kernels::sm90::AMajor;
  using kernels::sm90::BMajor;
  using kernels::sm90::GroupAxis;
  auto a = [](AMajor m) { return m == AMajor::k ? "k-major" : "mn-major"; };
  auto b = [](BMajor m) { return m == BMajor::k ? "k-major" : "mn-major"; };
  auto g = [](GroupAxis x) { return x == GroupAxis::m ? "groups along M" : "groups along K"; };
  const char* again = " (compile again for these arguments)";
  if (compiled.a_major != wanted.a_major)
    return invalid_argument(std::string("compiled_artifact: compiled for A ") + a(compiled.a_major) + "; got A " +
                            a(wanted.a_major) + again);
  if (compiled.b_major != wanted.b_major)
    return invalid_argument(std::string("compiled_artifact: compiled for B ") + b(compiled.b_major) + "; got B " +
                            b(wanted.b_major) + again);
  if (compiled.group_axis != wanted.group_axis)
    return invalid_argument(std::string("compiled_artifact: compiled for ") + g(compiled.group_axis) + "; got " +
                            g(wanted.group_axis) + again);
  // The epilogue op is compiled in: the instantiation names it (empty for the identity).
  if (instantiation_text(compiled) != instantiation_text(wanted))
    return invalid_argument("compiled_artifact: compiled for " + instantiation_text(compiled) + "; got arguments for " +
                            instantiation_text(wanted) + again);
  return Status::ok();
}

}  // namespace

GroupedGemmOperator::GroupedGemmOperator(const Sm90Design& design, DType ab, DType out)
    : Operator(make_metadata(design, ab, out)), design_(design), ab_(ab), out_(out) {}

std::shared_ptr<const Sm90Plan> GroupedGemmOperator::plan(const Arguments& args, const Target* target) const {
  Result<MachineModel> model = machine_model_of(operand_a(args).device, target);
  if (!model) return std::make_shared<const Sm90Plan>(model.status());
  // The estimate and the split depend on the model: two devices (or choices) never share a plan.
  const detail::Signature sig = detail::signature_with(args, fingerprint(*model));
  if (auto hit = plans_.find(sig)) {
    // The epilogue op is part of the kernel: a plan remembered for another op (a signature that
    // leaves the op out) is not this one's.
    if ((*hit)->config().op == kernel_op(epilogue_ops(args))) return *hit;
    return std::make_shared<const Sm90Plan>(args, design_, ab_, out_, *model);
  }
  auto made = std::make_shared<const Sm90Plan>(args, design_, ab_, out_, *model);
  plans_.put(sig, made);
  return made;
}

Status GroupedGemmOperator::supports_extra(const Arguments& args, const Target& target) const {
  return plan(args, &target)->status();
}

// One artifact per kernel text for the life of the operator: its module is loaded once per device
// however often compile() or run() without an artifact is called.
Result<Artifact> GroupedGemmOperator::do_compile(const Arguments& args) const {
  const std::shared_ptr<const Sm90Plan> pl = plan(args);
  GEMMOPS_TRY(pl->status());
  const jit::CompileRequest req = make_compile_request(name(), pl->config(), metadata().target);
  std::string key = req.name_expressions[0];
  for (const std::string& o : req.options) key += " " + o;
  {
    std::lock_guard lock(artifacts_mutex_);
    if (auto it = artifacts_.find(key); it != artifacts_.end()) return it->second;
  }
  auto impl = std::make_shared<Sm90Artifact>();
  impl->config = pl->config();
  impl->programmatic_launch = waits_for_programmatic_launch(req);
  GEMMOPS_ASSIGN_OR_RETURN(impl->compiled, jit::compile_cached(req));
  impl->module = std::make_unique<cuda::LazyModule>(impl->compiled->cubin);
  std::string description = req.name_expressions[0] + " (cubin from " + impl->compiled->origin + ")";
  if (!impl->compiled->log.empty()) description += "; nvrtc log: " + impl->compiled->log;
  Artifact artifact(name(), std::move(impl), std::move(description));
  std::lock_guard lock(artifacts_mutex_);
  return artifacts_.try_emplace(key, std::move(artifact)).first->second;
}

std::size_t GroupedGemmOperator::do_workspace_size(const Arguments& args) const {
  const std::shared_ptr<const Sm90Plan> pl = plan(args);
  return pl->status() ? pl->workspace_bytes() : 0;
}

Status GroupedGemmOperator::do_run(const Arguments& args, const Artifact& artifact, Stream stream,
                                   Workspace workspace) const {
  const std::shared_ptr<const Sm90Plan> pl = plan(args);
  GEMMOPS_TRY(pl->status());
  const auto* impl = artifact.get<Sm90Artifact>();
  GEMMOPS_TRY(check_artifact_fits(impl->config, pl->config()));
  const int splits = pl->splits();
  const auto& names = impl->compiled->lowered_names;
  if (splits > 1 && names.size() < 2) return internal_error("artifact: " + name() + " has no split-K kernel");
  const KernelProblem p = pl->bind(args);
  const std::string& lowered = names[splits > 1 ? 1 : 0];
  GEMMOPS_ASSIGN_OR_RETURN(LaunchShape shape, pl->launch_shape(p, *impl->module, lowered, splits));
  return launch_grouped(p, impl->config, shape, stream, splits, workspace, impl->programmatic_launch);
}

double GroupedGemmOperator::do_estimated_time_us(const Arguments& args, const Target& target) const {
  const std::shared_ptr<const Sm90Plan> pl = plan(args, &target);
  if (!pl->status()) return 1e30;
  return pl->estimate_us() + (design_.trial ? kTrialPenaltyUs : 0.0);
}

}  // namespace gemmops::sm90
