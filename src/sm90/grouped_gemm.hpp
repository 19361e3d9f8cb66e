// src/sm90/grouped_gemm.hpp: the Hopper grouped GEMM operator (pairs with kernels/sm90/grouped_gemm.cuh)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "gemmops/operator.hpp"
#include "sm90/designs.hpp"
#include "sm90/kernel_config.hpp"
#include "sm90/kernel_problem.hpp"

namespace gemmops::sm90 {

/// Shared memory a Hopper block may opt into (227 KiB on every sm_90 part).
inline constexpr int kSm90SmemBudget = 232448;

/// One design for one (A/B dtype, out dtype) pair. Serves the M-grouped, K-grouped, dense and
/// batched forms with A K- or M-major and B K- or N-major; compile() specialises the kernel for
/// the majors and the grouped dimension.
class GroupedGemmOperator final : public Operator {
 public:
  GroupedGemmOperator(const Sm90Design& design, DType ab, DType out);

 private:
  Status supports_extra(const Arguments& args, const Target& target) const override;
  Result<Artifact> do_compile(const Arguments& args) const override;
  Status do_run(const Arguments& args, const Artifact& artifact, Stream stream, Workspace workspace) const override;
  double do_estimated_time_us(const Arguments& args, const Target& target) const override;
  std::size_t do_workspace_size(const Arguments& args) const override;
  KernelConfig config_for(const KernelProblem& p) const;
  /// Ways to split K for `p`: GEMMOPS_SPLIT_K if set, else the estimate's choice.
  int splits_for(const KernelProblem& p) const;

  Sm90Design design_;
  DType ab_, out_;
};

}  // namespace gemmops::sm90
