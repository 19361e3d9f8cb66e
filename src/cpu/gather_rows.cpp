// src/cpu/gather_rows.cpp: a gathered A copied into a plain one, so every CPU path serves a_row_index
// SPDX-License-Identifier: Apache-2.0
#include "cpu/gather_rows.hpp"

#include <cstring>

namespace gemmops::cpu {

GatheredRows gather_a_rows(const GroupedGemmArguments& g) {
  const TensorDesc& A = g.A;
  const TensorDesc& idx = *g.a_row_index;
  const int64_t rows = idx.shape[0], k = A.size(1), a_rows = A.size(0);
  const auto esize = static_cast<int64_t>(size_of(A.dtype));
  GatheredRows out;
  out.a.assign(static_cast<std::size_t>(rows * k * esize), std::byte{0});
  const auto* src = static_cast<const std::byte*>(A.data);
  const auto* index = static_cast<const std::byte*>(idx.data);
  for (int64_t r = 0; r < rows; ++r) {
    int32_t v = 0;
    std::memcpy(&v, index + r * idx.stride(0) * 4, 4);
    if (v < 0 || v >= a_rows) continue;  // outside every group (validate() checks the rows groups read)
    for (int64_t c = 0; c < k; ++c)
      std::memcpy(out.a.data() + (r * k + c) * esize, src + (v * A.stride(0) + c * A.stride(1)) * esize,
                  static_cast<std::size_t>(esize));
  }
  GroupedGemmArguments plain = g;
  plain.A = TensorDesc::contiguous(A.dtype, {rows, k}, A.device);
  plain.A.data = out.a.data();
  plain.a_row_index.reset();
  out.args = plain;
  return out;
}

}  // namespace gemmops::cpu
