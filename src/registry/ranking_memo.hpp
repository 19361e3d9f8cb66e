// src/registry/ranking_memo.hpp: get_operators' ranking per argument signature, for the operators
// whose answers depend on the signature alone (Operator::answers_by_signature)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <vector>

#include "core/signature_memo.hpp"
#include "gemmops/operator.hpp"

namespace gemmops::detail {

/// One operator that supports the arguments, its estimate and its place in registration order
/// (the tie-break that keeps the order stable).
struct Ranked {
  OperatorPtr op;
  double time_us = 0;
  std::size_t index = 0;
};

class RankingMemo : public SignatureMemo<std::vector<Ranked>> {};

}  // namespace gemmops::detail
