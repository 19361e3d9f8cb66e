// tools/gemmops/cmd_run.cpp: `gemmops run`: pick an operator, compile, time, check against the CPU
// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "check.hpp"
#include "commands.hpp"
#include "gemmops/device.hpp"
#include "gemmops/registry.hpp"
#include "problem.hpp"

namespace gemmops::cli {
namespace {

constexpr std::string_view kSummary =
    "Runs one problem (default: the seed problem, M-grouped TotalM=8192 G=12 K=1024 N=2048 bf16) with\n"
    "the best operator for this machine, checks it against the CPU operator, and prints the time.";

struct Choice {
  OperatorPtr op;
  Device device;
};

// --operator NAME on the device it asks for; otherwise the best operator of the first device that has one.
Result<Choice> choose(const ProblemSpec& spec) {
  if (!spec.operator_name.empty()) {
    OperatorPtr op = default_registry().find(spec.operator_name);
    if (!op) return invalid_argument("--operator: no operator is named '" + spec.operator_name + "'; see 'gemmops list'");
    Device device = spec.device == DeviceChoice::cpu ? Device::cpu() : Device::cuda(0);
    if (spec.device == DeviceChoice::automatic && op->metadata().constraints.device == Device::Kind::cpu)
      device = Device::cpu();
    Arguments args = fake_arguments(spec, device);
    GEMMOPS_ASSIGN_OR_RETURN(Target target, default_target(args));
    GEMMOPS_TRY(op->supports(args, target));
    return Choice{op, device};
  }
  for (Device device : candidate_devices(spec)) {
    std::vector<OperatorPtr> ops = get_operators(fake_arguments(spec, device));
    if (!ops.empty()) return Choice{ops.front(), device};
    if (spec.device == DeviceChoice::cuda) {  // say why when the device itself is the problem
      for (const Rejection& r : get_rejections(fake_arguments(spec, device)))
        if (!r.op) return r.reason;
    }
  }
  return unsupported("no operator supports " + describe(spec) + "; 'gemmops list' gives the reasons");
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Warm-up, then one time sample per iteration: CUDA events on a GPU, the host clock on the CPU.
Result<std::vector<double>> time_runs(const Operator& op, const Problem& p, const Artifact& artifact,
                                      Workspace ws, int warmup, int iters) {
  for (int i = 0; i < warmup; ++i) GEMMOPS_TRY(op.run(p.args, artifact, nullptr, ws));
  if (p.device.is_cuda()) GEMMOPS_TRY(synchronize(nullptr, p.device.index));
  std::vector<double> samples;
  if (p.device.is_cuda()) {
    GEMMOPS_ASSIGN_OR_RETURN(EventTimer timer, EventTimer::create(p.device.index));
    for (int i = 0; i < iters; ++i) {
      GEMMOPS_TRY(timer.start());
      GEMMOPS_TRY(op.run(p.args, artifact, nullptr, ws));
      GEMMOPS_TRY(timer.stop());
      GEMMOPS_ASSIGN_OR_RETURN(float ms, timer.elapsed_ms());
      samples.push_back(ms);
    }
    return samples;
  }
  for (int i = 0; i < iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    GEMMOPS_TRY(op.run(p.args, artifact, nullptr, ws));
    samples.push_back(ms_since(t0));
  }
  return samples;
}

int run(const ProblemSpec& spec) {
  constexpr std::string_view kCmd = "run";
  Result<Choice> choice = choose(spec);
  if (!choice) return fail(kCmd, choice.status());
  const Operator& op = *choice->op;
  Result<Problem> problem = make_problem(spec, choice->device);
  if (!problem) return fail(kCmd, problem.status());
  Problem& p = *problem;
  if (Status s = p.poison_out(); !s) return fail(kCmd, s);

  std::printf("problem: %s on %s\noperator: %s\ndesign: %s\n", describe(spec).c_str(),
              p.device.to_string().c_str(), op.name().c_str(), op.metadata().design.to_string().c_str());
  auto t0 = std::chrono::steady_clock::now();
  Result<Artifact> artifact = op.compile(p.args);
  if (!artifact) return fail(kCmd, artifact.status());
  std::printf("compile: %.1f ms\n", ms_since(t0));

  // Scratch memory lives where the operands do.
  const size_t ws_bytes = op.workspace_size(p.args);
  std::vector<unsigned char> host_ws(p.device.is_cuda() ? 0 : ws_bytes);
  DeviceBuffer device_ws;
  Workspace ws{host_ws.data(), ws_bytes};
  if (p.device.is_cuda() && ws_bytes > 0) {
    Result<DeviceBuffer> buffer = DeviceBuffer::allocate(ws_bytes, p.device.index);
    if (!buffer) return fail(kCmd, buffer.status());
    device_ws = std::move(buffer).value();
    ws.data = device_ws.data();
  }

  const int iters = spec.iters.value_or(p.device.is_cuda() ? 20 : 1);
  const int warmup = spec.warmup.value_or(p.device.is_cuda() ? 5 : 0);
  Result<std::vector<double>> samples = time_runs(op, p, *artifact, ws, warmup, iters);
  if (!samples) return fail(kCmd, samples.status());
  std::vector<double>& t = *samples;
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  const double median_ms = t[t.size() / 2];
  std::printf("time: %.3f ms (median of %d)\nTFLOP/s: %.2f\n", median_ms, iters,
              median_ms > 0 ? p.flops() / (median_ms * 1e-3) / 1e12 : 0.0);

  if (!spec.check) {
    std::printf("check: skipped (--no-check)\n");
    return kExitOk;
  }
  if (Status s = p.fetch_out(); !s) return fail(kCmd, s);
  Result<double> err = check_against_cpu(p);
  if (!err) {
    std::printf("check: FAILED (%s)\n", err.status().message().c_str());
    return kExitFailure;
  }
  std::printf("check: ok (rel err %.1e)\n", *err);
  return kExitOk;
}

}  // namespace

int run_command(Words args) {
  ProblemSpec spec;
  int code = kExitOk;
  if (!parse_or_exit("run", args, SpecOptions::run, kSummary, &spec, &code)) return code;
  return run(spec);
}

}  // namespace gemmops::cli
