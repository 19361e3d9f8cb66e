// src/core/checked_math.cpp: overflow-checked element counts and byte spans of a TensorDesc
// SPDX-License-Identifier: Apache-2.0
#include "core/checked_math.hpp"

#include <cstddef>

namespace gemmops::detail {

std::optional<int64_t> checked_numel(const TensorDesc& t) {
  int64_t n = 1;
  for (int64_t s : t.shape) {
    if (s <= 0) return 0;
  }
  for (int64_t s : t.shape) {
    if (!checked_mul(n, s, &n)) return std::nullopt;
  }
  return n;
}

std::optional<int64_t> checked_span_bytes(const TensorDesc& t) {
  for (int64_t s : t.shape) {
    if (s <= 0) return 0;
  }
  // Offset of the last element is sum((size-1) * |stride|); the span is one element past it.
  int64_t last = 0;
  const std::size_t n = t.shape.size() < t.strides.size() ? t.shape.size() : t.strides.size();
  for (std::size_t i = 0; i < n; ++i) {
    int64_t stride = t.strides[i];
    if (stride == INT64_MIN) return std::nullopt;
    if (stride < 0) stride = -stride;
    int64_t term = 0;
    if (!checked_mul(t.shape[i] - 1, stride, &term)) return std::nullopt;
    if (!checked_add(last, term, &last)) return std::nullopt;
  }
  int64_t elements = 0;
  int64_t bytes = 0;
  if (!checked_add(last, 1, &elements)) return std::nullopt;
  if (!checked_mul(elements, static_cast<int64_t>(size_of(t.dtype)), &bytes)) return std::nullopt;
  return bytes;
}

}  // namespace gemmops::detail
