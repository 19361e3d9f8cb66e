// src/cpu/gather_k.hpp: K-grouped operands gathered along K (GroupedGemmArguments::a_k_index,
// b_k_index) copied into plain ones
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <vector>

#include "gemmops/arguments.hpp"

namespace gemmops::cpu {

/// The gathered operands in product order, and arguments that read them instead.
struct GatheredK {
  std::vector<std::byte> a;  // (M, TotalK), row-major, A's dtype (empty without a_k_index)
  std::vector<std::byte> b;  // (TotalK, N), row-major, B's dtype (empty without b_k_index)
  Arguments args;            // the copies as A and B, without the indices
};

/// Copies A[:, a_k_index[k]] to column k and B[b_k_index[k], :] to row k for every k of valid host
/// K-grouped `args` that carry either index; k whose index lies outside the source (never read:
/// past the last group) become zeros.
GatheredK gather_k(const GroupedGemmArguments& args);

}  // namespace gemmops::cpu
