// src/core/signature.hpp: everything of Arguments that support, ranking and plans read, as one
// hashable value (the data pointers are left out; only their alignment and presence count)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "gemmops/arguments.hpp"
#include "gemmops/target.hpp"

namespace gemmops::detail {

/// Two arguments with equal signatures get the same answers from every operator that answers by
/// signature (Operator::answers_by_signature): the same supports() status, estimate, plan and
/// kernel; only the memory they point to differs. Pointer alignment is kept up to 256 bytes, so
/// alignment rules of up to 256 bytes see no difference either.
struct Signature {
  static constexpr std::size_t kWords = 128;  // room for the epilogue's and both fp8 scale tensors
  std::array<int64_t, kWords> words{};
  std::size_t size = 0;
  std::size_t hash = 0;
  /// False when the arguments do not fit in the words (ranks far above 3, say):
  /// such arguments are answered afresh every time.
  bool valid = false;

  friend bool operator==(const Signature& a, const Signature& b) {
    if (a.hash != b.hash || a.size != b.size || a.valid != b.valid) return false;
    for (std::size_t i = 0; i < a.size; ++i)
      if (a.words[i] != b.words[i]) return false;
    return true;
  }
};

struct SignatureHash {
  std::size_t operator()(const Signature& s) const { return s.hash; }
};

/// The signature of `args`, and of `args` on `target` (for answers that depend on the target too:
/// its machine model, or GEMMOPS_MACHINE_MODEL when it names none, is part of it).
Signature signature_of(const Arguments& args);
Signature signature_of(const Arguments& args, const Target& target);
/// The signature of `args` with one more word (a provider's own key, e.g. its machine model's fingerprint).
Signature signature_with(const Arguments& args, std::uint64_t extra);

/// Whether rules on data (host offset or index values) apply: arguments whose offsets, a_row_index,
/// a_k_index or b_k_index carry data on the host are checked value by value on every call, so
/// their answers are never memoised.
bool has_host_offset_values(const Arguments& args);

}  // namespace gemmops::detail
