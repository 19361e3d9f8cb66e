// tools/gemmops/cmd_list.cpp: `gemmops list`: the supporting operators best first, then the rejected
// SPDX-License-Identifier: Apache-2.0
#include <cmath>
#include <cstdio>
#include <optional>

#include "commands.hpp"
#include "gemmops/registry.hpp"
#include "problem.hpp"
#include "table.hpp"

namespace gemmops::cli {
namespace {

constexpr std::string_view kSummary =
    "Lists the operators that support the problem, best first, and every other operator with the reason\n"
    "it does not. Tensors are fake: nothing is compiled or run. --target 90a discovers for Hopper\n"
    "without a GPU.";

std::string estimate(const Operator& op, const Arguments& args, const std::optional<Target>& target) {
  if (!target) return "-";
  if (op.metadata().trial) return "trial";  // not yet timed on a GPU: ranked last, its guess not shown
  double us = op.estimated_time_us(args, *target);
  if (!std::isfinite(us) || us <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", us);
  return buf;
}

// Scratch bytes run() needs (split-K partials, for example): "-" for none.
std::string workspace(const Operator& op, const Arguments& args) {
  const std::size_t bytes = op.workspace_size(args);
  if (bytes == 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / (1 << 20));
  return buf;
}

int list(const ProblemSpec& spec) {
  std::optional<Target> target;
  Device device = candidate_devices(spec).front();
  if (spec.target) {
    target = Target::parse(*spec.target).value();  // the parser has checked it
    device = target->is_cpu() ? Device::cpu() : Device::cuda(0);
  }
  const Arguments args = fake_arguments(spec, device);
  std::optional<Target> shown = target;
  if (!shown) {
    if (Result<Target> t = default_target(args)) shown = *t;
  }
  std::printf("problem: %s on %s, target %s\n\n", describe(spec).c_str(), device.to_string().c_str(),
              shown ? shown->to_string().c_str() : "unknown");

  auto wanted = [&](const OperatorPtr& op) { return spec.operator_name.empty() || (op && op->name() == spec.operator_name); };
  Table supported({"#", "operator", "design", "target", "est. us", "workspace"});
  int rank = 0;
  for (const OperatorPtr& op : get_operators(args, target)) {
    ++rank;
    if (!wanted(op)) continue;
    supported.add_row({std::to_string(rank), op->name(), op->metadata().design.to_string(),
                       op->metadata().target.to_string(), estimate(*op, args, shown), workspace(*op, args)});
  }
  Table rejected({"operator", "reason"});
  for (const Rejection& r : get_rejections(args, target)) {
    if (!spec.operator_name.empty() && !wanted(r.op)) continue;
    rejected.add_row({r.op ? r.op->name() : "(discovery)", r.reason.to_string()});
  }
  if (supported.empty()) std::printf("no operator supports the problem\n");
  else std::printf("supporting operators, best first:\n%s", supported.to_string().c_str());
  if (!rejected.empty()) std::printf("\nrejected:\n%s", rejected.to_string().c_str());
  return kExitOk;
}

}  // namespace

int list_command(Words args) {
  ProblemSpec spec;
  int code = kExitOk;
  if (!parse_or_exit("list", args, SpecOptions::list, kSummary, &spec, &code)) return code;
  return list(spec);
}

}  // namespace gemmops::cli
