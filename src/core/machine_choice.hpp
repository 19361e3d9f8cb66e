// src/core/machine_choice.hpp: the machine model asked for by name (the target's or GEMMOPS_MACHINE_MODEL),
// read in one place so that the providers' estimates and the memo keys agree on it
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>
#include <string>

#include "core/env.hpp"
#include "gemmops/target.hpp"

namespace gemmops::detail {

/// A machine model named by the caller, and where the name came from (for error messages).
struct MachineChoice {
  std::string name;
  const char* source;  ///< "target" or "GEMMOPS_MACHINE_MODEL"
};

/// The target's machine ("90a:h100_sxm") when it names one, else GEMMOPS_MACHINE_MODEL, else none.
/// A provider uses it only where no device is present (the device's own model wins).
inline std::optional<MachineChoice> explicit_machine(const Target* target) {
  if (target != nullptr && !target->machine.empty()) return MachineChoice{target->machine, "target"};
  if (auto name = env::machine_model()) return MachineChoice{*name, "GEMMOPS_MACHINE_MODEL"};
  return std::nullopt;
}

}  // namespace gemmops::detail
