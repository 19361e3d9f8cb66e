// src/arguments/validate_row_index.cpp: the gathered A's row index (GroupedGemmArguments::a_row_index)
// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <string>

#include "arguments/rules.hpp"

namespace gemmops::detail {

namespace {

// Host values only (device indices are the kernel's to trust), and only the entries a group reads:
// rows at or past offsets[G-1] and the padding before an aligned group are never read.
Status validate_row_index_values(const GroupedGemmArguments& g, int64_t a_rows) {
  const TensorDesc& idx = *g.a_row_index;
  if (idx.device.is_cuda() || idx.data == nullptr || g.offsets.data == nullptr) return Status::ok();
  const int64_t total = idx.shape[0], align = g.group_alignment;
  int64_t start = 0;
  for (int64_t i = 0; i < g.offsets.shape[0]; ++i) {
    start = (start + align - 1) / align * align;
    const int64_t end = std::min<int64_t>(host_i32(g.offsets, i), total);
    for (int64_t r = start; r < end; ++r) {
      const int32_t v = host_i32(idx, r);
      if (v < 0 || v >= a_rows)
        return invalid_argument("a_row_index: values must be rows of A, in [0, " + std::to_string(a_rows) +
                                "); got a_row_index[" + std::to_string(r) + "] = " + std::to_string(v));
    }
    start = std::max<int64_t>(start, end);
  }
  return Status::ok();
}

}  // namespace

Status validate_a_row_index(const GroupedGemmArguments& g, OperationKind kind) {
  if (!g.a_row_index) return Status::ok();
  const TensorDesc& idx = *g.a_row_index;
  if (kind != OperationKind::grouped_m)
    return invalid_argument("a_row_index: only the M-grouped form (2/3/2) gathers A's rows; got it for " +
                            std::string(name(kind)));
  GEMMOPS_TRY(validate_index_vector(idx, g.A, "a_row_index", "(TotalM,)", g.out.size(0), "out's rows"));
  // An fp8 A's scales describe A's own rows (or blocks of them), not the product's.
  if (g.a_scales)
    return invalid_argument("a_row_index: a gathered A takes no a_scales (they would need the same gather); got both");
  return validate_row_index_values(g, g.A.size(0));
}

}  // namespace gemmops::detail
