// src/sm90/epilogue_support.hpp: which fused epilogue ops each Hopper design serves, and why not
// (the host twin of kernels/sm90/epilogue_op.cuh)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <vector>

#include "gemmops/arguments.hpp"
#include "gemmops/epilogue.hpp"
#include "sm90/designs.hpp"
#include "sm90/kernel_problem.hpp"

namespace gemmops::sm90 {

/// The epilogue ops one design serves for one out dtype (meaning, as in epilogue.hpp). Every design
/// serves the identity (all defaults) in every form.
struct Sm90EpilogueSupport {
  std::vector<OperationKind> kinds;      ///< forms that take ops: M-grouped, dense, batched (none: no op)
  std::vector<Activation> activations;   ///< the gated ones only where the tile splits into halves
  std::vector<GateLayout> gate_layouts;  ///< for the gated activations
  std::vector<DType> bias_dtypes;        ///< fp32 and out's dtype (empty: no bias)
  bool row_scale = false;                ///< fp32 per row
  /// The second operands: pre_activation on every design that serves ops, activation_grad on tiles
  /// 128 or 256 wide of at most 128 accumulators a thread (the TMA-store designs' through their
  /// staging ring where it holds a chunk's three boxes; sm90/epilogue_outputs.cuh, epilogue_tma.cuh).
  bool pre_activation = false;
  bool activation_grad = false;
  /// The design's second operand is a trial: offered only with GEMMOPS_TRIAL_DESIGNS=1. The TMA
  /// store's backward (its first form passed the GPU suite on an H100, 2026-12-07, and the ranking
  /// picked it where it ran slower: Mixtral-8x7B's dgated 0.92x; h loaded by TMA, spill-free, has
  /// not run on a GPU).
  bool trial_pre_activation = false;
  bool trial_activation_grad = false;
};

/// What `d` serves with out of dtype `out`.
Sm90EpilogueSupport epilogue_support(const Sm90Design& d, DType out);

/// "" when `d` serves `ops`, else the reason, e.g. "epilogue: swiglu needs a tile width of 128 or
/// 256 (...); design 128x192x64_... has 192". Reads no data. Agrees with epilogue_support().
std::string check_design_epilogue(const Sm90Design& d, const EpilogueOps& ops);

/// The design's rule plus those of the arguments (form, dtypes, B's layout for the concatenated
/// gate halves, the second operands' column pairs on 16-byte rows): ok, or unsupported with the reason.
Status check_epilogue(const KernelProblem& p, const EpilogueOps& ops, const Sm90Design& d, DType out);

}  // namespace gemmops::sm90
