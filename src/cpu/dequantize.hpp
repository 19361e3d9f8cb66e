// src/cpu/dequantize.hpp: fp8 operands with scales -> fp32 host operands (the CPU operators' way to
// serve every scaling: dequantise, then the fp32 GEMM)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <vector>

#include "gemmops/arguments.hpp"

namespace gemmops::cpu {

/// A and B as fp32 (A[r,k] * sa(r,k), B[k,c] * sb(k,c), contiguous, same shapes) and `args`
/// pointing at them, with the scales dropped. Owns the buffers `args` points into.
struct DequantizedOperands {
  std::vector<float> a, b;
  Arguments args;
};

/// Whether `args` carry a_scales or b_scales.
bool has_scales(const Arguments& args);

/// Dequantises both operands of valid, host-resident `args` of operation `kind` (an fp8 operand
/// without scales has scale 1). K-grouped tensor and row scales are looked up by the group that
/// owns each K (host offsets); K past offsets[G-1] belongs to no group and becomes 0.
/// invalid_argument for offsets out of order or bounds; out_of_memory is thrown as std::bad_alloc.
Result<DequantizedOperands> dequantize_operands(const Arguments& args, OperationKind kind);

}  // namespace gemmops::cpu
