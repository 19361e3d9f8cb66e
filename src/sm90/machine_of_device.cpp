// src/sm90/machine_of_device.cpp: the machine model of a device, of an explicit choice, or the default
// SPDX-License-Identifier: Apache-2.0
#include "sm90/machine_of_device.hpp"

#include <optional>

#include "core/machine_choice.hpp"
#include "cuda/device.hpp"
#include "cuda/driver_api.hpp"
#include "sm90/machine_models.hpp"

namespace gemmops::sm90 {
namespace {

// run() plans on every call: the device's model is remembered per thread for the last ordinal, so
// the hot path neither copies the facts (a name string) nor upper-cases it again. A new driver (a
// test's fake one) is a new generation and asks again.
std::optional<MachineModel> model_of_cuda_device(int ordinal) {
  struct Memo {
    std::uint64_t generation = 0;
    int ordinal = -1;
    MachineModel model{};
  };
  thread_local Memo memo;
  const std::uint64_t generation = cuda::driver_generation();
  if (memo.ordinal == ordinal && memo.generation == generation) return memo.model;
  Result<cuda::DeviceFacts> facts = cuda::device_facts(ordinal);
  if (!facts) return std::nullopt;  // failures are not remembered: the facts cache does not keep them either
  memo = Memo{generation, ordinal, machine_model_for(*facts)};
  return memo.model;
}

}  // namespace

Result<MachineModel> machine_model_of(const Device& device, const Target* target) {
  std::optional<MachineModel> chosen;
  if (const auto choice = detail::explicit_machine(target)) {
    chosen = machine_model_named(choice->name);
    if (!chosen)
      return invalid_argument(std::string(choice->source) + ": the machine model must be one of " +
                              machine_model_names() + "; got '" + choice->name + "'");
  }
  if (device.is_cuda()) {
    if (std::optional<MachineModel> own = model_of_cuda_device(device.index)) return *own;
  }
  return chosen ? *chosen : kH200;
}

}  // namespace gemmops::sm90
