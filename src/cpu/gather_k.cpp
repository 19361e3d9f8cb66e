// src/cpu/gather_k.cpp: gathered K-grouped operands copied into plain ones, so every CPU path serves
// a_k_index and b_k_index
// SPDX-License-Identifier: Apache-2.0
#include "cpu/gather_k.hpp"

#include <cstring>

namespace gemmops::cpu {
namespace {

int32_t index_at(const TensorDesc& idx, int64_t k) {
  int32_t v = 0;
  std::memcpy(&v, static_cast<const std::byte*>(idx.data) + k * idx.stride(0) * 4, 4);
  return v;
}

// dst (rows, cols) row-major from src(r, c) = src element at (r, c) through `at`.
template <typename At>
void copy_elements(std::vector<std::byte>& dst, const TensorDesc& src, int64_t rows, int64_t cols, At at) {
  const auto esize = static_cast<int64_t>(size_of(src.dtype));
  dst.assign(static_cast<std::size_t>(rows * cols * esize), std::byte{0});
  const auto* base = static_cast<const std::byte*>(src.data);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t offset = at(r, c);  // elements, or -1: a zero
      if (offset >= 0)
        std::memcpy(dst.data() + (r * cols + c) * esize, base + offset * esize, static_cast<std::size_t>(esize));
    }
}

}  // namespace

GatheredK gather_k(const GroupedGemmArguments& g) {
  GatheredK out;
  GroupedGemmArguments plain = g;
  if (g.a_k_index) {
    const TensorDesc &A = g.A, &idx = *g.a_k_index;
    const int64_t m = A.size(0), total_k = idx.shape[0], cols = A.size(1);
    copy_elements(out.a, A, m, total_k, [&](int64_t r, int64_t k) -> int64_t {
      const int32_t v = index_at(idx, k);
      return v < 0 || v >= cols ? -1 : r * A.stride(0) + v * A.stride(1);
    });
    plain.A = TensorDesc::contiguous(A.dtype, {m, total_k}, A.device);
    plain.A.data = out.a.data();
    plain.a_k_index.reset();
  }
  if (g.b_k_index) {
    const TensorDesc &B = g.B, &idx = *g.b_k_index;
    const int64_t n = B.size(1), total_k = idx.shape[0], rows = B.size(0);
    copy_elements(out.b, B, total_k, n, [&](int64_t k, int64_t c) -> int64_t {
      const int32_t v = index_at(idx, k);
      return v < 0 || v >= rows ? -1 : v * B.stride(0) + c * B.stride(1);
    });
    plain.B = TensorDesc::contiguous(B.dtype, {total_k, n}, B.device);
    plain.B.data = out.b.data();
    plain.b_k_index.reset();
  }
  out.args = plain;
  return out;
}

}  // namespace gemmops::cpu
