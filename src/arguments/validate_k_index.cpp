// src/arguments/validate_k_index.cpp: the K-grouped form's gathered operands (GroupedGemmArguments::
// a_k_index, b_k_index)
// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <string>

#include "arguments/rules.hpp"

namespace gemmops::detail {

namespace {

// Host values only (device indices are the kernel's to trust), and only the entries a group reads
// (those at or past offsets[G-1] never are), once the offsets are known valid.
Status validate_k_index_values(const GroupedGemmArguments& g, const TensorDesc& idx, std::string_view role,
                               std::string_view source, int64_t rows) {
  if (idx.device.is_cuda() || idx.data == nullptr || g.offsets.data == nullptr || g.offsets.device.is_cuda())
    return Status::ok();
  int64_t end = 0;
  for (int64_t i = 0; i < g.offsets.shape[0]; ++i) end = std::max<int64_t>(end, host_i32(g.offsets, i));
  end = std::min<int64_t>(end, idx.shape[0]);
  for (int64_t k = 0; k < end; ++k) {
    const int32_t v = host_i32(idx, k);
    if (v < 0 || v >= rows)
      return invalid_argument(std::string(role) + ": values must be " + std::string(source) + ", in [0, " +
                              std::to_string(rows) + "); got " + std::string(role) + "[" + std::to_string(k) +
                              "] = " + std::to_string(v));
  }
  return Status::ok();
}

}  // namespace

int64_t total_k(const GroupedGemmArguments& g) {
  if (g.a_k_index && g.a_k_index->rank() == 1) return g.a_k_index->shape[0];
  if (g.b_k_index && g.b_k_index->rank() == 1) return g.b_k_index->shape[0];
  return g.A.size(1);
}

Status validate_k_indices(const GroupedGemmArguments& g, OperationKind kind) {
  if (!g.a_k_index && !g.b_k_index) return Status::ok();
  const char* role = g.a_k_index ? "a_k_index" : "b_k_index";
  if (kind != OperationKind::grouped_k)
    return invalid_argument(std::string(role) + ": only the K-grouped form (2/2/3) gathers along K; got it for " +
                            std::string(name(kind)));
  if (g.A.rank() != 2 || g.B.rank() != 2) return Status::ok();  // the shape rules name them
  // TotalK: the A index's length, else the B index's; an operand without an index has TotalK along K.
  const int64_t a_k = g.a_k_index ? -1 : g.A.size(1), b_k = g.b_k_index ? -1 : g.B.size(0);
  if (g.a_k_index) {
    GEMMOPS_TRY(validate_index_vector(*g.a_k_index, g.A, "a_k_index", "(TotalK,)", b_k, "the other operand's K"));
    if (g.a_scales)
      return invalid_argument("a_k_index: a gathered A takes no a_scales (they would need the same gather); got both");
  }
  if (g.b_k_index) {
    GEMMOPS_TRY(validate_index_vector(*g.b_k_index, g.B, "b_k_index", "(TotalK,)",
                                      g.a_k_index ? g.a_k_index->shape[0] : a_k, "the other operand's K"));
    if (g.b_scales)
      return invalid_argument("b_k_index: a gathered B takes no b_scales (they would need the same gather); got both");
  }
  return Status::ok();
}

Status validate_k_index_values(const GroupedGemmArguments& g) {
  if (g.a_k_index)
    GEMMOPS_TRY(validate_k_index_values(g, *g.a_k_index, "a_k_index", "columns of A", g.A.size(1)));
  if (g.b_k_index) GEMMOPS_TRY(validate_k_index_values(g, *g.b_k_index, "b_k_index", "rows of B", g.B.size(0)));
  return Status::ok();
}

}  // namespace gemmops::detail
