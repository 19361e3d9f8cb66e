// src/core/tensor.cpp: TensorDesc queries (sizes, spans, majors) and their human-readable forms
// SPDX-License-Identifier: Apache-2.0
#include "gemmops/tensor.hpp"

#include <limits>

#include "core/checked_math.hpp"
#include "gemmops/assert.hpp"

namespace gemmops {

std::string Device::to_string() const {
  if (kind == Kind::cpu) return "cpu";
  return "cuda:" + std::to_string(index);
}

std::string_view name(Major m) { return m == Major::k ? "k-major" : "mn-major"; }

TensorDesc TensorDesc::contiguous(DType dtype, std::vector<int64_t> shape, Device device, void* data) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) {
    int64_t next = shape[i + 1] > 0 ? shape[i + 1] : 1;
    // Saturate rather than wrap: validation reports the span overflow with a message.
    if (!detail::checked_mul(strides[i + 1], next, &strides[i])) strides[i] = std::numeric_limits<int64_t>::max();
  }
  return TensorDesc(dtype, std::move(shape), std::move(strides), device, data);
}

namespace {
int normalize_dim(int dim, std::size_t rank) {
  int r = static_cast<int>(rank);
  int d = dim < 0 ? dim + r : dim;
  GEMMOPS_ASSERT(d >= 0 && d < r, "dimension out of range");
  return d;
}
}  // namespace

int64_t TensorDesc::size(int dim) const { return shape[normalize_dim(dim, shape.size())]; }

int64_t TensorDesc::stride(int dim) const { return strides[normalize_dim(dim, strides.size())]; }

int64_t TensorDesc::numel() const {
  auto n = detail::checked_numel(*this);
  return n ? *n : std::numeric_limits<int64_t>::max();
}

int64_t TensorDesc::span_bytes() const {
  auto s = detail::checked_span_bytes(*this);
  return s ? *s : std::numeric_limits<int64_t>::max();
}

namespace {
std::string tuple_string(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(v[i]);
  }
  if (v.size() == 1) s += ",";
  return s + ")";
}
}  // namespace

std::string TensorDesc::shape_string() const { return tuple_string(shape); }

std::string TensorDesc::describe() const {
  std::string s(name(dtype));
  s += ' ';
  s += tuple_string(shape);
  s += " strides ";
  s += tuple_string(strides);
  s += " on ";
  s += device.to_string();
  if (is_fake()) s += ", fake";
  return s;
}

bool matrix_major(const TensorDesc& t, bool cols_is_k, Major* major) {
  if (t.rank() < 2 || t.strides.size() != t.shape.size()) return false;
  Major m;
  if (t.stride(-1) == 1) {
    m = cols_is_k ? Major::k : Major::mn;
  } else if (t.stride(-2) == 1) {
    m = cols_is_k ? Major::mn : Major::k;
  } else {
    return false;
  }
  if (major != nullptr) *major = m;
  return true;
}

}  // namespace gemmops
