// src/registry/default_target.cpp: the target discovery assumes, and the default-registry shortcuts (built into `gemmops`)
// SPDX-License-Identifier: Apache-2.0
#include <string>

#include "core/env.hpp"
#include "gemmops/plan.hpp"
#include "gemmops/registry.hpp"

namespace gemmops {

Result<Target> default_target(const Arguments& args) {
  const Device device = operand_a(args).device;
  if (!device.is_cuda()) return Target::cpu();
  Result<Target> found = device_target(device.index);
  if (found) return found;
  // No device here: GEMMOPS_TARGET lets discovery and compile work on a GPU-less machine.
  if (auto text = env::target()) {
    Result<Target> parsed = Target::parse(*text);
    if (!parsed) return invalid_argument("GEMMOPS_TARGET: " + parsed.status().message());
    return parsed;
  }
  return no_device("no CUDA device for " + device.to_string() + " (" + found.status().message() +
                   ") and GEMMOPS_TARGET is unset");
}

std::vector<OperatorPtr> get_operators(const Arguments& args, std::optional<Target> target) {
  if (!target) {
    Result<Target> t = default_target(args);
    if (!t) return {};
    target = *t;
  }
  return default_registry().get_operators(args, *target);
}

std::vector<Rejection> get_rejections(const Arguments& args, std::optional<Target> target) {
  if (!target) {
    Result<Target> t = default_target(args);
    // Without a target every operator is rejected for the same reason; say it once, with no operator.
    if (!t) return {Rejection{nullptr, t.status()}};
    target = *t;
  }
  return default_registry().rejections(args, *target);
}

Status register_operator(OperatorPtr op) { return default_registry().add(std::move(op)); }

Result<Plan> make_plan(const Arguments& args, std::optional<Target> target) {
  if (!target) {
    GEMMOPS_ASSIGN_OR_RETURN(Target t, default_target(args));
    target = t;
  }
  std::vector<OperatorPtr> ops = default_registry().get_operators(args, *target);
  if (ops.empty()) {
    GEMMOPS_TRY(validate(args));  // a broken argument is the one reason worth stating
    std::string reasons;
    for (const Rejection& r : default_registry().rejections(args, *target)) {
      if (reasons.size() > 600) break;
      reasons += (reasons.empty() ? "" : "; ") + r.op->name() + ": " + r.reason.message();
    }
    return unsupported("operator: none serves these arguments on " + target->to_string() + "; first reasons: " +
                       reasons);
  }
  return make_plan(args, ops.front());
}

}  // namespace gemmops
