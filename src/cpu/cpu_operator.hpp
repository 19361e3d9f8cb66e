// src/cpu/cpu_operator.hpp: CpuOperator, one per operation kind, serving every dtype combination
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "gemmops/operator.hpp"

namespace gemmops::cpu {

/// The host operator for one operation kind: A and B of bf16, fp16, fp32, e4m3 or e5m2 (fp8 may
/// mix; other mixes are refused by validate()), out bf16, fp16 or fp32, fp32 accumulation, any
/// strides. run() computes synchronously on the calling thread plus a pool of
/// GEMMOPS_CPU_THREADS threads and ignores the stream; grouped offsets are read from host memory.
class CpuOperator final : public Operator {
 public:
  explicit CpuOperator(OperationKind kind);

  /// The metadata of the CPU operator for `kind`, named "cpu_<operation>" (e.g.
  /// "cpu_grouped_gemm_m"): one operator serves all dtypes, so make_operator_name's dtype fields
  /// would misname it.
  static OperatorMetadata make_metadata(OperationKind kind);

  /// Support and estimate read only the arguments' layout (host offset values are checked per run).
  bool answers_by_signature() const override { return true; }

 private:
  Result<Artifact> do_compile(const Arguments& args) const override;
  Status do_run(const Arguments& args, const Artifact& artifact, Stream stream,
                Workspace workspace) const override;
  double do_estimated_time_us(const Arguments& args, const Target& target) const override;

  OperationKind kind_;
};

}  // namespace gemmops::cpu
