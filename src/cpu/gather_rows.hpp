// src/cpu/gather_rows.hpp: a gathered A (GroupedGemmArguments::a_row_index) copied into a plain one
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <vector>

#include "gemmops/arguments.hpp"

namespace gemmops::cpu {

/// A's rows in product order, and arguments that read them instead of the gathered A.
struct GatheredRows {
  std::vector<std::byte> a;  // (TotalM, K), row-major, A's dtype
  Arguments args;            // `a` as A, without a_row_index
};

/// Copies A[a_row_index[r], :] to row r for every r of valid host M-grouped `args` that carry an
/// a_row_index; rows whose index lies outside A (never read: past the last group) become zeros.
GatheredRows gather_a_rows(const GroupedGemmArguments& args);

}  // namespace gemmops::cpu
