// src/registry/autotune.cpp: compile, warm up, time each candidate, order by the median
// SPDX-License-Identifier: Apache-2.0
#include "gemmops/autotune.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <optional>
#include <string>

#include "core/env.hpp"
#include "core/worker_threads.hpp"
#include "cuda/context.hpp"
#include "gemmops/device.hpp"

namespace gemmops {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Each run waits at most o.timeout_ms; `timed_out` says when one did not finish.
Result<double> time_runs(const Operator& op, const Arguments& args, const Artifact& artifact,
                         const AutotuneOptions& o, bool& timed_out) {
  const bool on_gpu = operand_a(args).device.is_cuda();
  const int ordinal = operand_a(args).device.index;
  // The candidate's own workspace, if it wants one (split-K partials), freed after its timing.
  DeviceBuffer scratch;
  Workspace ws;
  if (const std::size_t bytes = op.workspace_size(args); bytes > 0) {
    if (!on_gpu) return invalid_argument("workspace: " + op.name() + " wants device workspace for host operands");
    GEMMOPS_ASSIGN_OR_RETURN(scratch, DeviceBuffer::allocate(bytes, ordinal));
    ws = {scratch.data(), bytes};
  }
  std::vector<double> us;
  if (on_gpu) {
    GEMMOPS_ASSIGN_OR_RETURN(EventTimer timer, EventTimer::create(ordinal));
    for (int i = 0; i < o.warmup + o.iterations; ++i) {  // the warm-up runs are waited for too
      GEMMOPS_TRY(timer.start(o.stream));
      GEMMOPS_TRY(op.run(args, artifact, o.stream, ws));
      GEMMOPS_TRY(timer.stop(o.stream));
      Result<float> ms = timer.elapsed_ms(o.timeout_ms);
      if (!ms) {
        timed_out = true;
        return driver_error(op.name() + ": " + ms.status().message());
      }
      if (i >= o.warmup) us.push_back(double(*ms) * 1e3);
    }
  } else {
    for (int i = 0; i < o.warmup; ++i) GEMMOPS_TRY(op.run(args, artifact, o.stream, ws));
    for (int i = 0; i < o.iterations; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      GEMMOPS_TRY(op.run(args, artifact, o.stream, ws));
      us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  return median(std::move(us));
}

// Compiles the candidates on up to `threads` threads: a cold cache compiles each kernel with NVRTC
// for seconds, and one by one that made autotune of twenty candidates take minutes. Each operator is
// compiled once, by one thread; different operators may compile at the same time.
std::vector<std::optional<Result<Artifact>>> compile_all(const Arguments& args, const std::vector<const Operator*>& ops,
                                                         int threads) {
  std::vector<std::optional<Result<Artifact>>> artifacts(ops.size());
  std::atomic<std::size_t> next{0};
  const CUcontext caller = cuda::thread_context();  // workers load their modules where the caller launches
  auto work = [&](std::size_t) {
    (void)cuda::adopt_context(caller);  // on failure, compile() makes the primary context current itself
    for (std::size_t i = next++; i < ops.size(); i = next++) {
      if (!ops[i]) continue;
      try {  // an exception must not leave a worker thread (std::terminate): it fails its candidate
        artifacts[i].emplace(ops[i]->compile(args));
      } catch (const std::exception& e) {
        artifacts[i].emplace(internal_error(ops[i]->name() + ": compile threw: " + e.what()));
      } catch (...) {
        artifacts[i].emplace(internal_error(ops[i]->name() + ": compile threw"));
      }
    }
  };
  const int n = std::clamp<int>(threads, 1, static_cast<int>(std::max<std::size_t>(ops.size(), 1)));
  detail::run_worker_threads(static_cast<std::size_t>(n), work);
  return artifacts;
}

int compile_threads(const AutotuneOptions& o) {
  if (o.compile_threads > 0) return o.compile_threads;
  return std::min(env::cpu_threads(), 16);
}

}  // namespace

std::vector<Timing> autotune(const Arguments& args, const std::vector<OperatorPtr>& candidates,
                             const AutotuneOptions& options, const RunTimer& timer) {
  AutotuneOptions o = options;
  o.iterations = std::max(1, o.iterations);
  o.warmup = std::max(0, o.warmup);
  const bool trial_allowed = o.include_trial || env::trial_designs();
  // First who may be timed, then their compiles side by side, then the timings one at a time.
  std::vector<Timing> all;
  std::vector<const Operator*> to_compile;
  for (const OperatorPtr& op : candidates) {
    if (!op) continue;
    Timing t{op, 0, op->supports(args)};
    if (t.status && op->metadata().trial && !trial_allowed)
      t.status = unsupported(op->name() + ": a trial design (not yet verified on hardware) is timed only with "
                             "AutotuneOptions::include_trial or GEMMOPS_TRIAL_DESIGNS=1");
    to_compile.push_back(t.status ? op.get() : nullptr);
    all.push_back(std::move(t));
  }
  auto artifacts = compile_all(args, to_compile, compile_threads(o));
  std::vector<Timing> timed, failed;
  std::string busy;  // the candidate that did not finish: nothing after it is timed
  for (std::size_t i = 0; i < all.size(); ++i) {
    Timing& t = all[i];
    const Operator& op = *t.op;
    if (t.status && !busy.empty()) {
      t.status = driver_error(op.name() + ": not timed: " + busy + " did not finish before it and may still occupy the device");
    } else if (t.status) {
      Result<Artifact>& artifact = *artifacts[i];
      if (!artifact) {
        t.status = artifact.status();
      } else {
        bool timed_out = false;
        auto us = timer ? timer(op, args, *artifact, o) : time_runs(op, args, *artifact, o, timed_out);
        if (us) t.median_us = *us;
        t.status = us.status();
        if (timed_out) busy = op.name();
      }
    }
    (t.status ? timed : failed).push_back(std::move(t));
  }
  // Stable: equal times keep the candidates' order (the heuristic's, when it came from get_operators).
  std::stable_sort(timed.begin(), timed.end(), [](const Timing& a, const Timing& b) { return a.median_us < b.median_us; });
  timed.insert(timed.end(), failed.begin(), failed.end());
  return timed;
}

}  // namespace gemmops
