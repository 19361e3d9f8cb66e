// src/sm90/grouped_gemm.hpp: the Hopper grouped GEMM operator (pairs with kernels/sm90/grouped_gemm.cuh)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/signature_memo.hpp"
#include "gemmops/operator.hpp"
#include "sm90/designs.hpp"
#include "sm90/kernel_config.hpp"
#include "sm90/kernel_problem.hpp"

namespace gemmops::sm90 {

/// Shared memory a Hopper block may opt into (227 KiB on every sm_90 part).
inline constexpr int kSm90SmemBudget = 232448;

class Sm90Plan;

/// One design for one (A/B dtype, out dtype) pair. Serves the M-grouped, K-grouped, dense and
/// batched forms with A K- or M-major and B K- or N-major; compile() specialises the kernel for
/// the majors and the grouped dimension. Every hook reads one Sm90Plan per argument signature,
/// made on first use; compile() returns one artifact (one loaded module) per kernel.
class GroupedGemmOperator final : public Operator {
 public:
  GroupedGemmOperator(const Sm90Design& design, DType ab, DType out);

  bool answers_by_signature() const override { return true; }

 private:
  Status supports_extra(const Arguments& args, const Target& target) const override;
  Result<Artifact> do_compile(const Arguments& args) const override;
  Status do_run(const Arguments& args, const Artifact& artifact, Stream stream, Workspace workspace) const override;
  double do_estimated_time_us(const Arguments& args, const Target& target) const override;
  std::size_t do_workspace_size(const Arguments& args) const override;
  /// The plan of `args`' signature on the machine model of `args`' device (else the one `target`
  /// or GEMMOPS_MACHINE_MODEL names, else h200; machine_of_device.hpp), made and remembered on first
  /// use per (signature, model). Hooks without a target pass null.
  std::shared_ptr<const Sm90Plan> plan(const Arguments& args, const Target* target = nullptr) const;

  Sm90Design design_;
  DType ab_, out_;
  mutable detail::SignatureMemo<std::shared_ptr<const Sm90Plan>> plans_;
  mutable std::mutex artifacts_mutex_;
  mutable std::map<std::string, Artifact> artifacts_;  // by the kernel's instantiation and options
};

}  // namespace gemmops::sm90
