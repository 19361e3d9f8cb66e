// src/cuda/tensor_map.cpp: the cuTensorMapEncodeTiled rules as messages, then the call
// SPDX-License-Identifier: Apache-2.0
#include "cuda/tensor_map.hpp"

#include <string>

namespace gemmops::cuda {
namespace {

unsigned swizzle_span(CUtensorMapSwizzle s) {
  switch (s) {
    case CU_TENSOR_MAP_SWIZZLE_NONE: return 0;
    case CU_TENSOR_MAP_SWIZZLE_32B: return 32;
    case CU_TENSOR_MAP_SWIZZLE_64B: return 64;
    default: return 128;  // 128B and its atom variants
  }
}

std::string str(std::uint64_t v) { return std::to_string(v); }

Status validate(CUtensorMapDataType type, int rank, const void* base, const std::uint64_t* dims,
                const std::uint64_t* strides, const std::uint32_t* box, CUtensorMapSwizzle swizzle,
                CUtensorMapInterleave interleave) {
  const unsigned elem = tensor_map_element_bytes(type);
  const int min_rank = interleave == CU_TENSOR_MAP_INTERLEAVE_NONE ? 1 : 3;
  if (rank < min_rank || rank > 5)
    return invalid_argument("tensor map: rank must be in [" + str(min_rank) + ", 5]; got " + str(rank));
  if (dims == nullptr || box == nullptr || (rank > 1 && strides == nullptr))
    return invalid_argument("tensor map: dims, box and (for rank > 1) strides must not be null");
  const std::uint64_t align = interleave == CU_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;
  if (base == nullptr)
    return invalid_argument("tensor map: base must be a device address; got null (a fake tensor has no data)");
  if (reinterpret_cast<std::uintptr_t>(base) % align != 0)
    return invalid_argument("tensor map: base must be " + str(align) + "-byte aligned; got address " +
                            str(reinterpret_cast<std::uintptr_t>(base)));
  for (int i = 0; i < rank; ++i) {
    if (dims[i] == 0 || dims[i] > (std::uint64_t{1} << 32))
      return invalid_argument("tensor map: dims[" + str(i) + "] must be in [1, 2^32]; got " + str(dims[i]));
    if (box[i] == 0 || box[i] > 256)
      return invalid_argument("tensor map: box[" + str(i) + "] must be in [1, 256]; got " + str(box[i]));
  }
  for (int i = 0; i + 1 < rank; ++i) {
    if (strides[i] % align != 0 || strides[i] >= (std::uint64_t{1} << 40))
      return invalid_argument("tensor map: strides_bytes[" + str(i) + "] (dim " + str(i + 1) +
                              ") must be a multiple of " + str(align) + " and < 2^40; got " + str(strides[i]));
  }
  const std::uint64_t inner = std::uint64_t{box[0]} * elem;
  if (interleave == CU_TENSOR_MAP_INTERLEAVE_NONE) {
    if (inner % 16 != 0)
      return invalid_argument("tensor map: box[0] * element size must be a multiple of 16 bytes; got " +
                              str(box[0]) + " * " + str(elem) + " = " + str(inner));
    const unsigned span = swizzle_span(swizzle);
    if (span != 0 && inner > span)
      return invalid_argument("tensor map: box[0] * element size must be <= the swizzle span " + str(span) +
                              " bytes; got " + str(box[0]) + " * " + str(elem) + " = " + str(inner));
  }
  return Status::ok();
}

}  // namespace

unsigned tensor_map_element_bytes(CUtensorMapDataType type) {
  switch (type) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8: return 1;
    case CU_TENSOR_MAP_DATA_TYPE_UINT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16: return 2;
    case CU_TENSOR_MAP_DATA_TYPE_UINT32:
    case CU_TENSOR_MAP_DATA_TYPE_INT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ: return 4;
    case CU_TENSOR_MAP_DATA_TYPE_UINT64:
    case CU_TENSOR_MAP_DATA_TYPE_INT64:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64: return 8;
    default: return 1;  // the packed sub-byte types: the driver checks their finer rules
  }
}

Result<CUtensorMap> encode_tiled(const DriverApi& api, CUtensorMapDataType type, int rank, void* base,
                                 const std::uint64_t* dims, const std::uint64_t* strides_bytes,
                                 const std::uint32_t* box, CUtensorMapSwizzle swizzle,
                                 CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob,
                                 CUtensorMapInterleave interleave) {
  GEMMOPS_TRY(validate(type, rank, base, dims, strides_bytes, box, swizzle, interleave));
  const cuuint32_t element_strides[5] = {1, 1, 1, 1, 1};
  CUtensorMap map{};
  GEMMOPS_CU(api, cuTensorMapEncodeTiled, &map, type, static_cast<cuuint32_t>(rank), base, dims,
             strides_bytes, box, element_strides, interleave, swizzle, l2, oob);
  return map;
}

}  // namespace gemmops::cuda
