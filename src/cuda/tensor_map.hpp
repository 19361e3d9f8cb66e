// src/cuda/tensor_map.hpp: TMA descriptors (cuTensorMapEncodeTiled) with the rules checked first
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda.h>

#include <cstdint>

#include "cuda/driver_api.hpp"
#include "gemmops/status.hpp"

namespace gemmops::cuda {

/// Bytes of one element of `type`; 1 for the packed sub-byte types (their rules are the driver's).
unsigned tensor_map_element_bytes(CUtensorMapDataType type);

/// Encodes a tiled tensor map over `rank` (1..5) dimensions, innermost first. `strides_bytes` has
/// rank-1 entries (the stride of dims 1..rank-1 in bytes); element strides are all 1. Checks the
/// documented rules first and names the one that fails: base 16-byte aligned (32 with interleave,
/// and never null: fake tensors have no base), dims in [1, 2^32], strides multiples of 16 (32)
/// and < 2^40, box extents in [1, 256], the inner box a multiple of 16 bytes and no wider than the
/// swizzle span. Needs no context; invalid_argument or driver_error.
Result<CUtensorMap> encode_tiled(const DriverApi& api, CUtensorMapDataType type, int rank, void* base,
                                 const std::uint64_t* dims, const std::uint64_t* strides_bytes,
                                 const std::uint32_t* box, CUtensorMapSwizzle swizzle,
                                 CUtensorMapL2promotion l2 = CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                 CUtensorMapFloatOOBfill oob = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
                                 CUtensorMapInterleave interleave = CU_TENSOR_MAP_INTERLEAVE_NONE);

}  // namespace gemmops::cuda
