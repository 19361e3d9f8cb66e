// src/fp8/quantize_rules.hpp: the rules of quantize_fp8's tensors (both devices) and the geometry
// that validation, the host loop and the device launch share
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "core/scale_geometry.hpp"
#include "gemmops/scaling.hpp"

namespace gemmops::fp8 {

/// x (R, C) or (L, R, C) seen as an operand with MN = R, K = C (stacked when of rank 3).
detail::OperandGeometry quantize_geometry(const TensorDesc& x);

/// Dtypes, ranks, shapes, layouts and devices of x, q and the scales, each failure naming the
/// tensor and the rule (invalid_argument). Fake tensors pass: run-time data is checked apart.
Status validate_quantize(const TensorDesc& x, const TensorDesc& q, const OperandScales& s);

/// Every tensor with elements carries data ("x: run needs data; got a fake tensor (no data pointer)"),
/// and, on a CUDA device, x and the scales are aligned to their element size.
Status validate_quantize_data(const TensorDesc& x, const TensorDesc& q, const OperandScales& s);

}  // namespace gemmops::fp8
