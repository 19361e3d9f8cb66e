// src/sm90/fp8_scales.hpp: what the fp8 main loop (kernels/sm90/mainloop_fp8.cuh) serves, its
// refusals with the operand and the rule, and its scales bound into the kernel's problem
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "gemmops/arguments.hpp"
#include "gemmops/metadata.hpp"
#include "sm90/kernel_problem.hpp"

namespace gemmops::sm90 {

/// The fp8 operators' constraints: M-grouped e4m3 A and B, both K-major, bf16 out, A's scales
/// block_1x128 and B's block_128x128 in k_major layout, or both row scales; no epilogue op.
void set_fp8_constraints(OperandConstraints& c);

/// What the constraints cannot say: both operands scaled, K a multiple of 16 (16 bytes of e4m3:
/// TMA's stride rule), B's 128x128 scales with rows of exactly ceil(K/128) blocks, and scale strides
/// that fit the kernel's 32-bit fields. unsupported naming the operand and the rule.
Status check_fp8_problem(const Arguments& args, const KernelProblem& p);

/// Points `p` at the scales of `args` (run-time values: a call may change them).
void bind_fp8_scales(const Arguments& args, KernelProblem* p);

/// Whether `args`' scales are a row of A's and a column of B's (KernelConfig::fp8_rowwise), not blocks.
bool fp8_rowwise(const Arguments& args);

}  // namespace gemmops::sm90
