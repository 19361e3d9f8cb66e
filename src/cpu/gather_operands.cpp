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

}  // namespace

bool has_gathered_operands(const GroupedGemmArguments& g) {
  return g.a_row_index || g.a_k_index || g.b_k_index;
}

GatheredOperands gather_operands(const GroupedGemmArguments& g) {
  GatheredOperands out;
  GroupedGemmArguments plain = g;
  const TensorDesc &A = g.A, &B = g.B;
  if (g.a_row_index) {
    const TensorDesc& idx = *g.a_row_index;
    const int64_t total_m = idx.shape[0], k = A.size(1), rows = A.size(0);
    copy_elements(out.a, A, total_m, k, [&](int64_t r, int64_t c) -> int64_t {
      const int32_t v = index_at(idx, r);
      return v < 0 || v >= rows ? -1 : v * A.stride(0) + c * A.stride(1);
    });
    plain.A = over(A, total_m, k, out.a);
    plain.a_row_index.reset();
  }
  if (g.a_k_index) {
    const TensorDesc& idx = *g.a_k_index;
    const int64_t m = A.size(0), total_k = idx.shape[0], cols = A.size(1);
    copy_elements(out.a, A, m, total_k, [&](int64_t r, int64_t k) -> int64_t {
      const int32_t v = index_at(idx, k);
      return v < 0 || v >= cols ? -1 : r * A.stride(0) + v * A.stride(1);
    });
    plain.A = over(A, m, total_k, out.a);
    plain.a_k_index.reset();
  }
  if (g.b_k_index) {
    const TensorDesc& idx = *g.b_k_index;
    const int64_t n = B.size(1), total_k = idx.shape[0], rows = B.size(0);
    copy_elements(out.b, B, total_k, n, [&](int64_t k, int64_t c) -> int64_t {
      const int32_t v = index_at(idx, k);
      return v < 0 || v >= rows ? -1 : v * B.stride(0) + c * B.stride(1);
    });
    plain.B = over(B, total_k, n, out.b);
    plain.b_k_index.reset();
  }
  out.args = plain;
  return out;
}

}  // namespace gemmops::cpu
