// src/registry/autotune.cpp: compile, warm up, time the candidates (round-robin on a GPU), order by the median
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

// Host operands: each run timed by the clock (the GPU's candidates are timed round-robin below).
Result<double> time_host_runs(const Operator& op, const Arguments& args, const Artifact& artifact,
                              const AutotuneOptions& o) {
  if (op.workspace_size(args) > 0)
    return invalid_argument("workspace: " + op.name() + " wants device workspace for host operands");
  std::vector<double> us;
  for (int i = 0; i < o.warmup; ++i) GEMMOPS_TRY(op.run(args, artifact, o.stream, {}));
  for (int i = 0; i < o.iterations; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    GEMMOPS_TRY(op.run(args, artifact, o.stream, {}));
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(std::move(us));
}

// A candidate being timed round-robin: its workspace and its run times so far.
struct Contender {
  Timing* timing;
  const Artifact* artifact;
  DeviceBuffer scratch;
  Workspace ws;
  std::vector<double> us;
};

// Times GPU candidates round-robin: run i of every candidate before run i + 1 of any, so drift over
// the timing (clocks, temperature, what L2 holds) falls on all alike; timed one after another, the
// first candidates ran on a cooler GPU. A run that fails fails its candidate only; one that does not
// finish stops the timing (its kernel may still occupy the device) and fails the rest.
void time_round_robin(const Arguments& args, std::vector<Contender>& cs, const AutotuneOptions& o) {
  const int ordinal = operand_a(args).device.index;
  Result<EventTimer> timer = EventTimer::create(ordinal);
  if (!timer) {
    for (Contender& c : cs) c.timing->status = timer.status();
    return;
  }
  for (Contender& c : cs) {
    if (const std::size_t bytes = c.timing->op->workspace_size(args); bytes > 0) {
      Result<DeviceBuffer> b = DeviceBuffer::allocate(bytes, ordinal);
      if (!b) {
        c.timing->status = b.status();
        continue;
      }
      c.scratch = std::move(*b);
      c.ws = {c.scratch.data(), bytes};
    }
  }
  std::string busy;
  for (int i = 0; i < o.warmup + o.iterations && busy.empty(); ++i) {
    for (Contender& c : cs) {
      if (!c.timing->status || !busy.empty()) continue;
      const Operator& op = *c.timing->op;
      Status s = timer->start(o.stream);
      if (s) s = op.run(args, *c.artifact, o.stream, c.ws);
      if (s) s = timer->stop(o.stream);
      if (!s) {
        c.timing->status = s;
        continue;
      }
      Result<float> ms = timer->elapsed_ms(o.timeout_ms);
      if (!ms) {
        c.timing->status = driver_error(op.name() + ": " + ms.status().message());
        busy = op.name();
        continue;
      }
      if (i >= o.warmup) c.us.push_back(double(*ms) * 1e3);
    }
  }
  for (Contender& c : cs) {
    if (!c.timing->status) continue;
    if (c.us.size() < static_cast<std::size_t>(o.iterations)) {
      c.timing->status = driver_error(c.timing->op->name() + ": not timed: " + busy +
                                      " did not finish and may still occupy the device");
      continue;
    }
    c.timing->median_us = median(std::move(c.us));
  }
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
  // First who may be timed, then their compiles side by side, then the timings.
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
  for (std::size_t i = 0; i < all.size(); ++i)  // a failed compile fails its candidate
    if (all[i].status && !*artifacts[i]) all[i].status = artifacts[i]->status();
  if (!timer && operand_a(args).device.is_cuda()) {
    std::vector<Contender> cs;
    for (std::size_t i = 0; i < all.size(); ++i)
      if (all[i].status) cs.push_back(Contender{&all[i], &**artifacts[i], {}, {}, {}});
    time_round_robin(args, cs, o);
  } else {  // a given timer, or host operands: one candidate after another
    for (std::size_t i = 0; i < all.size(); ++i) {
      Timing& t = all[i];
      if (!t.status) continue;
      auto us = timer ? timer(*t.op, args, **artifacts[i], o) : time_host_runs(*t.op, args, **artifacts[i], o);
      if (us) t.median_us = *us;
      t.status = us.status();
    }
  }
  std::vector<Timing> timed, failed;
  for (Timing& t : all) (t.status ? timed : failed).push_back(std::move(t));
  // Stable: equal times keep the candidates' order (the heuristic's, when it came from get_operators).
  std::stable_sort(timed.begin(), timed.end(), [](const Timing& a, const Timing& b) { return a.median_us < b.median_us; });
  timed.insert(timed.end(), failed.begin(), failed.end());
  return timed;
}

}  // namespace gemmops
