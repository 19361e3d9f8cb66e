// src/core/target.cpp: parsing and printing targets, and which operator targets a device runs
// SPDX-License-Identifier: Apache-2.0
#include "gemmops/target.hpp"

#include <cctype>
#include <string>

namespace gemmops {

namespace {

Status bad_target(std::string_view text) {
  return invalid_argument("target: must be \"cpu\" or a compute capability like \"90a\", \"90\" or \"80\", "
                          "optionally with a machine model (\"90a:h100_sxm\"); got \"" +
                          std::string(text) + "\"");
}

std::string lower(std::string_view text) {
  std::string s;
  s.reserve(text.size());
  for (char c : text) s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return s;
}

// A machine model's name: letters, digits and underscores (which names exist is the provider's to say).
bool machine_name(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

}  // namespace

Result<Target> Target::parse(std::string_view text) {
  std::string s = lower(text);
  if (s == "cpu") return Target::cpu();
  std::string machine;
  if (const size_t colon = s.find(':'); colon != std::string::npos) {
    machine = s.substr(colon + 1);
    s.resize(colon);
    if (!machine_name(machine)) return bad_target(text);
  }
  std::string_view v = s;
  if (v.substr(0, 3) == "sm_") {
    v.remove_prefix(3);
  } else if (v.substr(0, 2) == "sm") {
    v.remove_prefix(2);
  }
  bool arch_specific = false;
  if (!v.empty() && v.back() == 'a') {
    arch_specific = true;
    v.remove_suffix(1);
  }
  // Two or three digits: "80", "90", "100", "120"; anything else is not a compute capability.
  if (v.size() < 2 || v.size() > 3 || v.front() == '0') return bad_target(text);
  int cc = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return bad_target(text);
    cc = cc * 10 + (c - '0');
  }
  Target t = Target::sm(cc, arch_specific);
  t.machine = std::move(machine);
  return t;
}

std::string Target::to_string() const {
  if (is_cpu()) return "cpu";
  return std::to_string(cc) + (arch_specific ? "a" : "") + (machine.empty() ? "" : ":" + machine);
}

bool Target::can_run(const Target& op_target) const {
  if (is_cpu() || op_target.is_cpu()) return is_cpu() && op_target.is_cpu();
  // Arch-specific code (wgmma, setmaxnreg) exists on exactly one compute capability; portable
  // code runs on its own and every later one.
  if (op_target.arch_specific) return op_target.cc == cc;
  return op_target.cc <= cc;
}

}  // namespace gemmops
