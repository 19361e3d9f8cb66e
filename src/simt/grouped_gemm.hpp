// src/simt/grouped_gemm.hpp: the portable grouped GEMM operator (pairs with kernels/simt/grouped_gemm.cuh)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "gemmops/operator.hpp"
#include "jit/compile.hpp"

namespace gemmops::simt {

/// The tile of the portable kernels, as a Design: 64 x 64 outputs per block, 16-deep K steps.
Design simt_design();

/// One (A/B dtype, out dtype) pair of bf16, fp16, fp32, on any NVIDIA GPU of compute capability 8.0
/// or later: every operation kind (gemm, batched, M-, K- and N-grouped, masked M-grouped), aligned
/// M-grouped groups, any strides, zero_tail, offsets (counts) read on the device and clamped. fp32 accumulation with plain FMA (no TF32). The path
/// for what the sm90 operators do not serve; its estimate ranks it after them.
class SimtGemmOperator final : public Operator {
 public:
  SimtGemmOperator(DType ab, DType out);

  static OperatorMetadata make_metadata(DType ab, DType out);

  /// Support (element alignment, the launch plan's limits) and estimate read only the layout.
  bool answers_by_signature() const override { return true; }

 private:
  Status supports_extra(const Arguments& args, const Target& target) const override;
  Result<Artifact> do_compile(const Arguments& args) const override;
  Status do_run(const Arguments& args, const Artifact& artifact, Stream stream, Workspace workspace) const override;
  double do_estimated_time_us(const Arguments& args, const Target& target) const override;

  DType ab_, out_;
};

/// The translation unit and name expressions of one (A/B dtype, out dtype) pair: the kernels of
/// every form, in the order of kernels::simt::Form. The target is left for each architecture.
jit::CompileRequest compile_request(const std::string& kernel_name, DType ab, DType out);

/// A rough run time of the portable kernel on `args` (valid), in microseconds: a launch, its tile
/// passes at a whole-GPU rate of ~15 TFLOP/s, and its compulsory bytes at 1.5 TB/s. Higher than
/// any sm90 estimate of the same arguments, lower than the CPU operators' on sizes worth a GPU.
double estimate_time_us(const Arguments& args);

}  // namespace gemmops::simt
