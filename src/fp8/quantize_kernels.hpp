// src/fp8/quantize_kernels.hpp: what NVRTC compiles for quantize_fp8 (one request per input dtype and
// vector width), for the launcher and the compile tests
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "gemmops/dtype.hpp"
#include "gemmops/tensor.hpp"
#include "jit/compile.hpp"

namespace gemmops::fp8 {

/// The kernel steps of one request, in the order of its name expressions (kernels/fp8/quantize.cuh's
/// Step): the fused block_1x128, block_128x128 and row kernels, then tensor scales' four steps.
enum class QuantizeStep : int {
  block_1x128 = 0, block_128x128, row, tensor_zero, tensor_amax, tensor_apply, tensor_scale
};
inline constexpr int kQuantizeSteps = 7;

/// The vector widths (elements a load) a request exists for: 1, 2, 4 and 8 for bf16 (2 to 16
/// bytes), 1, 2 and 4 for fp32 (4 to 16 bytes).
bool is_quantize_vector_width(DType in, int vec);

/// The widest load of x (up to 16 bytes) that x and q both allow, in elements: their columns
/// contiguous, C a multiple of it, every row and instance of both starting on a vector boundary.
/// 1 for strided columns (x = B^T), misaligned data or an odd C.
int quantize_vector_width(const TensorDesc& x, const TensorDesc& q);

/// The seven kernels of x dtype `in` (bf16 or fp32) and `vec` elements a load; no target (set per
/// architecture; sm_89 or later: the e4m3 conversion).
jit::CompileRequest quantize_request(DType in, int vec);

}  // namespace gemmops::fp8
