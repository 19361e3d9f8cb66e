// tests/support/sm90_split_k.hpp: whether an sm90 operator's kernels split K (white-box: the rule in
// src/sm90/kernel_config.hpp), so that split-K tests skip, with the reason, the designs that never split
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gtest/gtest.h>

#include "gemmops/metadata.hpp"
#include "sm90/designs.hpp"
#include "sm90/kernel_config.hpp"

namespace gemmops::testing {

/// True when `m`'s M-grouped kernel without an epilogue op has a split-K twin: false for designs
/// with 192 accumulators a consumer thread (the fix-up would spill beside them).
inline bool splits_k(const OperatorMetadata& m) {
  for (const sm90::Sm90Design& d : sm90::sm90_designs()) {
    if (!(d.design == m.design)) continue;
    return sm90::has_split_k_twin(sm90::make_kernel_config(d, m.constraints.a_dtypes.at(0),
                                                           m.constraints.out_dtypes.at(0), Major::k, Major::k, false));
  }
  ADD_FAILURE() << "no registered design " << m.design.to_string();
  return false;
}

}  // namespace gemmops::testing

/// Skips a split-K test on an operator whose kernels never split K, saying why.
#define GEMMOPS_SKIP_WITHOUT_SPLIT_K(metadata)                                                          \
  do {                                                                                                 \
    if (!::gemmops::testing::splits_k(metadata))                                                       \
      GTEST_SKIP() << "the design never splits K (192 accumulators a thread: the fix-up would spill)"; \
  } while (0)
