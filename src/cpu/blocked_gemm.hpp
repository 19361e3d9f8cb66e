// src/cpu/blocked_gemm.hpp: a list of strided GEMMs, computed blocked and multi-threaded on the host
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <span>

#include "cpu/pack.hpp"
#include "gemmops/status.hpp"

namespace gemmops::cpu {

/// out (m x n) = a (m x k) * b (k x n), accumulated in fp32. k == 0 writes zeros.
struct GemmTask {
  MatrixRef a, b;
  OutRef out;
  int64_t m = 0, n = 0, k = 0;
};

/// Computes every task synchronously on up to `threads` threads (the caller's thread is one of
/// them). Tasks must not overlap in out. out_of_memory when the pack buffers cannot be allocated;
/// falls back to fewer threads when the system refuses to start one.
Status run_blocked(std::span<const GemmTask> tasks, int threads);

}  // namespace gemmops::cpu
