// src/cpu/quantize.hpp: quantize_fp8's host loop (the reference the device kernel is checked against)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "core/scale_geometry.hpp"
#include "gemmops/scaling.hpp"

namespace gemmops::cpu {

/// x (geometry g: instances x R x C) into e4m3 q and fp32 scales, block by block in order of
/// instance, rows, columns, as include/gemmops/scaling.hpp words it. The tensors are valid, on the
/// host and carry data. invalid_argument at the first non-finite x, naming where; the blocks
/// before it are then already written.
Status quantize_on_host(const TensorDesc& x, const TensorDesc& q, const OperandScales& s,
                        const gemmops::detail::OperandGeometry& g);

}  // namespace gemmops::cpu
