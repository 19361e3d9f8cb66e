// include/gemmops/autotune.hpp: order operators by measured time instead of the heuristic's estimate
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <functional>
#include <vector>

#include "gemmops/operator.hpp"

namespace gemmops {

struct AutotuneOptions {
  int warmup = 3;       ///< untimed runs first (the first also loads the kernel)
  int iterations = 10;  ///< timed runs; the median counts
  Stream stream = nullptr;
  /// Wall time each run (warm-up runs included) may take before the candidate is reported as failed
  /// with that reason. Nothing after such a candidate is timed: its kernel may still occupy the device.
  double timeout_ms = 10000;
  /// Trial designs (OperatorMetadata::trial: not yet verified on hardware) are timed only when this is
  /// true or GEMMOPS_TRIAL_DESIGNS=1; otherwise they are returned as failed with that reason.
  bool include_trial = false;
  /// Threads that compile the candidates before any is timed (each operator's compile() runs once, on
  /// one thread; different operators' compiles may run at the same time). 0: the machine's cores, at
  /// most 16; 1: one by one, for user operators whose compile() is not safe to run beside another's.
  int compile_threads = 0;
};

/// One candidate's outcome: its median run time, or why it could not be timed.
struct Timing {
  OperatorPtr op;
  double median_us = 0;
  Status status;
};

/// Times one operator on `args` with `artifact`: microseconds per run (given one, autotune times the
/// candidates one after another through it). The default times CUDA tensors with events on
/// options.stream (synchronising with it), round-robin: run i of every candidate before run i + 1 of
/// any, so drift over the timing (clocks, temperature, L2) falls on all alike; host tensors with a clock.
using RunTimer =
    std::function<Result<double>(const Operator& op, const Arguments& args, const Artifact& artifact,
                                 const AutotuneOptions& options)>;

/// Compiles and times every candidate that supports `args` (they need data: each run overwrites
/// out, so pass scratch outputs of the real shapes), and returns them fastest first, then the ones
/// that failed with their Status, in candidate order. Synchronises the stream; not graph-safe. Never
/// waits longer than options.timeout_ms for one run: a kernel that does not finish is that
/// candidate's failure, not the caller's hang.
/// Choose once per shape and keep the result: get_operators() stays the cheap, stable order.
std::vector<Timing> autotune(const Arguments& args, const std::vector<OperatorPtr>& candidates,
                             const AutotuneOptions& options = {}, const RunTimer& timer = {});

}  // namespace gemmops
