// tools/gemmops/commands.cpp: what the subcommands share
// SPDX-License-Identifier: Apache-2.0
#include "commands.hpp"

#include <cstdio>

#include "gemmops/device.hpp"

namespace gemmops::cli {

bool parse_or_exit(std::string_view command, Words args, SpecOptions which, std::string_view summary,
                   ProblemSpec* spec, int* exit_code) {
  Result<ProblemSpec> parsed = parse_problem_spec(args, which);
  if (!parsed) {
    std::fprintf(stderr, "gemmops %.*s: %s\nsee 'gemmops %.*s --help'\n", int(command.size()), command.data(),
                 parsed.status().message().c_str(), int(command.size()), command.data());
    *exit_code = kExitUsage;
    return false;
  }
  if (parsed->help) {
    std::printf("usage: gemmops %.*s [options]\n%.*s\n\noptions (--name value or --name=value):\n%s",
                int(command.size()), command.data(), int(summary.size()), summary.data(),
                problem_spec_help(which).c_str());
    *exit_code = kExitOk;
    return false;
  }
  *spec = std::move(parsed).value();
  return true;
}

int fail(std::string_view command, const Status& status) {
  std::fprintf(stderr, "gemmops %.*s: %s\n", int(command.size()), command.data(), status.message().c_str());
  return kExitFailure;
}

bool have_cuda_device() {
  Result<int> count = device_count();
  return count && *count > 0;
}

std::vector<Device> candidate_devices(const ProblemSpec& spec) {
  switch (spec.device) {
    case DeviceChoice::cpu: return {Device::cpu()};
    case DeviceChoice::cuda: return {Device::cuda(0)};
    case DeviceChoice::automatic: break;
  }
  if (have_cuda_device()) return {Device::cuda(0), Device::cpu()};
  return {Device::cpu()};
}

std::string describe(const ProblemSpec& s) {
  std::string sizes;
  switch (s.op) {
    case OperationKind::grouped_m:
      sizes = "TotalM=" + std::to_string(s.total_m) + " G=" + std::to_string(s.groups) + " K=" + std::to_string(s.k);
      break;
    case OperationKind::grouped_k:
      sizes = "M=" + std::to_string(s.total_m) + " G=" + std::to_string(s.groups) + " TotalK=" + std::to_string(s.k);
      break;
    case OperationKind::grouped_n:
      sizes = "M=" + std::to_string(s.total_m) + " G=" + std::to_string(s.groups) + " K=" + std::to_string(s.k);
      break;
    case OperationKind::gemm: sizes = "M=" + std::to_string(s.total_m) + " K=" + std::to_string(s.k); break;
    case OperationKind::batched_gemm:
      sizes = "L=" + std::to_string(s.groups) + " M=" + std::to_string(s.total_m / s.groups) + " K=" + std::to_string(s.k);
      break;
    case OperationKind::grouped_m_masked:
      sizes = "G=" + std::to_string(s.groups) + " MaxM=" + std::to_string(s.total_m / s.groups) + " K=" + std::to_string(s.k);
      break;
  }
  const char* n_name = s.op == OperationKind::grouped_n ? " TotalN=" : " N=";
  std::string text = std::string(name(s.op)) + " " + sizes + n_name + std::to_string(s.n) + " " +
                     std::string(name(s.dtype)) + "->" + std::string(name(s.out_dtype)) + " (fp32 acc) B " +
                     std::string(name(s.b_major));
  if (s.op != OperationKind::gemm && s.op != OperationKind::batched_gemm)
    text += ", " + std::string(name(s.dist)) + " groups (seed " + std::to_string(s.seed) + ")";
  return text;
}

}  // namespace gemmops::cli
