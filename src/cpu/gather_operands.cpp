// src/cpu/gather_operands.cpp: gathered operands copied into plain ones (one element walk serves the
// M-grouped row gather and both gathers along K)
// SPDX-License-Identifier: Apache-2.0
#include "cpu/gather_operands.hpp"

#include <cstring>

namespace gemmops::cpu {
namespace {

int32_t index_at(const TensorDesc& idx, int64_t i) {
  int32_t v = 0;
  std::memcpy(&v, static_cast<const std::byte*>(idx.data) + i * idx.stride(0) * 4, 4);
  return v;
}

// dst (rows, cols) row-major from src's element at(r, c) (an element offset, or -1: a zero).
template <typename At>
void copy_elements(std::vector<std::byte>& dst, const TensorDesc& src, int64_t rows, int64_t cols, At at) {
  const auto esize = static_cast<int64_t>(size_of(src.dtype));
  dst.assign(static_cast<std::size_t>(rows * cols * esize), std::byte{0});
  const auto* base = static_cast<const std::byte*>(src.data);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t offset = at(r, c);
      if (offset >= 0)
        std::memcpy(dst.data() + (r * cols + c) * esize, base + offset * esize, static_cast<std::size_t>(esize));
    }
}

// `t` as a row-major (rows, cols) tensor over `storage`.
TensorDesc over(const TensorDesc& t, int64_t rows, int64_t cols, std::vector<std::byte>& storage) {
  TensorDesc d = TensorDesc::contiguous(t.dtype, {rows, cols}, t.device);
  d.data = storage.data();
  return d;
}

// t's rows (axis 0) or columns (axis 1) read through idx, copied row-major into `storage`, as a
// tensor over it; an index outside t reads zeros.
TensorDesc gather_along(const TensorDesc& t, const TensorDesc& idx, int axis, std::vector<std::byte>& storage) {
  const int64_t n = idx.shape[0], extent = t.size(axis);
  const int64_t rows = axis == 0 ? n : t.size(0), cols = axis == 0 ? t.size(1) : n;
  copy_elements(storage, t, rows, cols, [&](int64_t r, int64_t c) -> int64_t {
    const int32_t v = index_at(idx, axis == 0 ? r : c);
    if (v < 0 || v >= extent) return -1;
    return axis == 0 ? v * t.stride(0) + c * t.stride(1) : r * t.stride(0) + v * t.stride(1);
  });
  return over(t, rows, cols, storage);
}

}  // namespace

bool has_gathered_operands(const GroupedGemmArguments& g) {
  return g.a_row_index || g.a_k_index || g.b_k_index;
}

GatheredOperands gather_operands(const GroupedGemmArguments& g) {
  GatheredOperands out;
  GroupedGemmArguments plain = g;
  if (g.a_row_index) {  // M-grouped: A's rows
    plain.A = gather_along(g.A, *g.a_row_index, 0, out.a);
    plain.a_row_index.reset();
  }
  if (g.a_k_index) {  // K-grouped: A's columns
    plain.A = gather_along(g.A, *g.a_k_index, 1, out.a);
    plain.a_k_index.reset();
  }
  if (g.b_k_index) {  // K-grouped: B's rows
    plain.B = gather_along(g.B, *g.b_k_index, 0, out.b);
    plain.b_k_index.reset();
  }
  out.args = plain;
  return out;
}

}  // namespace gemmops::cpu
