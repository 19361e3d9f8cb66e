// src/core/checked_math.hpp: int64 arithmetic that reports overflow instead of wrapping (shape math)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>

#include "gemmops/tensor.hpp"

namespace gemmops::detail {

inline bool checked_mul(int64_t a, int64_t b, int64_t* r) { return !__builtin_mul_overflow(a, b, r); }
inline bool checked_add(int64_t a, int64_t b, int64_t* r) { return !__builtin_add_overflow(a, b, r); }

/// Elements of `t`, or empty when the product overflows int64. Negative sizes count as 0.
std::optional<int64_t> checked_numel(const TensorDesc& t);

/// Bytes from the first to one past the last addressable element, or empty when that overflows
/// int64. 0 when any size is <= 0. Strides are taken by magnitude.
std::optional<int64_t> checked_span_bytes(const TensorDesc& t);

}  // namespace gemmops::detail
