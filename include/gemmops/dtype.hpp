// include/gemmops/dtype.hpp: element types of operands
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace gemmops {

/// Element types. e4m3/e5m2 are the OCP fp8 formats (e4m3 = "fn": no infinities).
enum class DType { bf16, fp16, fp32, e4m3, e5m2, i32 };

inline constexpr DType kAllDTypes[] = {DType::bf16, DType::fp16, DType::fp32,
                                       DType::e4m3, DType::e5m2, DType::i32};

/// Bytes per element.
constexpr std::size_t size_of(DType t) {
  switch (t) {
    case DType::bf16:
    case DType::fp16: return 2;
    case DType::fp32:
    case DType::i32: return 4;
    case DType::e4m3:
    case DType::e5m2: return 1;
  }
  return 0;
}

constexpr bool is_floating(DType t) { return t != DType::i32; }
constexpr bool is_fp8(DType t) { return t == DType::e4m3 || t == DType::e5m2; }

/// "bf16", "fp16", "fp32", "e4m3", "e5m2", "int32".
std::string_view name(DType t);
/// Parses the names above and common aliases ("bfloat16", "float16", "half", "float32", "float",
/// "float8_e4m3fn", "float8_e5m2", "i32"). Empty on an unknown name.
std::optional<DType> parse_dtype(std::string_view text);

}  // namespace gemmops
