// include/gemmops/target.hpp: the target model ("90a", "90", "80", "cpu") and device discovery
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <string_view>

#include "gemmops/status.hpp"

namespace gemmops {

/// What an operator is built for, or what a device offers. "90a" is sm_90a: Hopper with its
/// arch-specific instructions (wgmma, setmaxnreg), which run on compute capability 9.0 only.
/// "90" runs on 9.0 and later, "80" on 8.0 and later; "cpu" is the host.
struct Target {
  enum class Kind { cpu, cuda };
  Kind kind = Kind::cpu;
  int cc = 0;                   ///< compute capability as major*10+minor, e.g. 90
  bool arch_specific = false;   ///< the 'a' suffix
  /// The machine model the estimates assume where no device is at hand ("h100_sxm" in "90a:h100_sxm");
  /// empty: GEMMOPS_MACHINE_MODEL, else the default. A present device's own model always wins.
  std::string machine;

  static Target cpu() { return {}; }
  static Target sm(int cc, bool arch_specific = false) { return {Kind::cuda, cc, arch_specific}; }
  /// Parses "cpu", "90a", "sm_90a", "sm90a", "90", "80", "100a", ..., each CUDA one optionally with
  /// ":<machine model>" ("90a:h100_sxm"; the sm90 operators say which names they know).
  static Result<Target> parse(std::string_view text);
  /// "cpu", "90a", "80", "90a:h100_sxm".
  std::string to_string() const;
  bool is_cpu() const { return kind == Kind::cpu; }

  /// Whether code built for `op_target` runs on a device described by `*this`. The device side is
  /// always the most specific target of the device ("90a" for an H100/H200).
  bool can_run(const Target& op_target) const;

  friend bool operator==(const Target&, const Target&) = default;
};

/// The target of CUDA device `ordinal` ("90a" for compute capability 9.0). no_device when the
/// driver cannot be loaded or has no such device; never aborts, never prints.
Result<Target> device_target(int ordinal = 0);

/// ok when CUDA device `ordinal` can run operators built for `target` ("90a", "cpu", ...);
/// otherwise a Status saying why: no driver, no device, or a device of another architecture.
Status device_supports(std::string_view target, int ordinal = 0);

/// Like device_supports, but when no device is present the environment variable GEMMOPS_TARGET
/// (e.g. "90a") stands in for one, so that discovery and compile work on a machine without a GPU.
Status device_or_env_supports(std::string_view target, int ordinal = 0);

}  // namespace gemmops
