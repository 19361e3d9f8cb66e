// src/cpu/gather_operands.hpp: gathered operands (GroupedGemmArguments::a_row_index, a_k_index,
// b_k_index) copied into plain ones, so every CPU path serves them
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <vector>

#include "gemmops/arguments.hpp"

namespace gemmops::cpu {

/// The gathered operands in product order, and arguments that read them instead.
struct GatheredOperands {
  std::vector<std::byte> a;  // A gathered: (TotalM, K) or (M, TotalK), row-major, A's dtype (else empty)
  std::vector<std::byte> b;  // B gathered along K: (TotalK, N), row-major, B's dtype (else empty)
  Arguments args;            // the copies as A and B, without the indices
};

/// True when `args` read an operand through an index.
bool has_gathered_operands(const GroupedGemmArguments& args);

/// For valid host grouped `args`: row r of A (a_row_index), column k of A (a_k_index) or row k of B
/// (b_k_index) copied from the indexed row or column; an index outside its operand (never read:
/// past the last group) gives zeros.
GatheredOperands gather_operands(const GroupedGemmArguments& args);

}  // namespace gemmops::cpu
