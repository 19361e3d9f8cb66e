// tests/support/sm90_operators.hpp: the registered sm90 operators, as test parameters printed by name
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <algorithm>
#include <vector>

#include "gemmops/registry.hpp"
#include "support/print_operator.hpp"

namespace gemmops::testing {

/// Built from metadata alone, so the test list is the same on every machine. The operators of
/// 16-bit operands: the fp8 ones take scaled e4m3 arguments, which these tests' problems are not
/// (sm90_fp8_operators, tests of their own).
inline std::vector<OperatorPtr> sm90_operators() {
  std::vector<OperatorPtr> ops;
  for (const OperatorPtr& op : default_registry().all())
    if (op->metadata().provider == "sm90" && op->metadata().constraints.a_dtypes.at(0) != DType::e4m3)
      ops.push_back(op);
  return ops;
}

/// The sm90 operators of the fp8 main loop (e4m3 A and B with block scales).
inline std::vector<OperatorPtr> sm90_fp8_operators() {
  std::vector<OperatorPtr> ops;
  for (const OperatorPtr& op : default_registry().all())
    if (op->metadata().provider == "sm90" && op->metadata().constraints.a_dtypes.at(0) == DType::e4m3)
      ops.push_back(op);
  return ops;
}

/// Whether `op` serves this form at all (designs with 192 accumulators a consumer thread serve the
/// M-grouped forms only: their producer's 24 registers are too few for the K-grouped walk).
inline bool serves(const Operator& op, OperationKind kind) {
  const std::vector<OperationKind>& kinds = op.metadata().constraints.kinds;
  return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
}

/// The designs that serve no K-grouped form: 192 accumulators a consumer thread (128x192, 192x128:
/// the producer's 24 registers) or a cluster along N (its kernels are M-grouped only).
inline bool design_serves_m_grouped_only(const Design& d) {
  return d.tile_m * d.tile_n == 128 * 192 || d.cluster_n > 1;
}

/// One operator per design and output path: bf16 -> bf16 (the 16-bit stores, direct or TMA) and
/// bf16 -> fp32 (the fp32 direct store). The other dtype pairs differ from these only in the MMA's
/// input type and the 16-bit packing, which matches_the_float64_reference covers on every operator:
/// the scheduler, pipeline, layout, zero-tail and split-K tests run once per path, not per dtype pair.
inline std::vector<OperatorPtr> sm90_operators_per_path() {
  std::vector<OperatorPtr> ops;
  for (const OperatorPtr& op : sm90_operators()) {
    const OperandConstraints& c = op->metadata().constraints;
    if (c.a_dtypes.at(0) == DType::bf16 && (c.out_dtypes.at(0) == DType::bf16 || c.out_dtypes.at(0) == DType::fp32))
      ops.push_back(op);
  }
  return ops;
}

}  // namespace gemmops::testing
