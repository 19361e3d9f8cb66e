// src/sm90/machine_of_device.cpp: the machine model of a device, of an explicit choice, or the default
// SPDX-License-Identifier: Apache-2.0
#include "sm90/machine_of_device.hpp"

#include "core/machine_choice.hpp"
#include "cuda/device.hpp"
#include "sm90/machine_models.hpp"

namespace gemmops::sm90 {

Result<MachineModel> machine_model_of(const Device& device, const Target* target) {
  std::optional<MachineModel> chosen;
  if (const auto choice = detail::explicit_machine(target)) {
    chosen = machine_model_named(choice->name);
    if (!chosen)
      return invalid_argument(std::string(choice->source) + ": the machine model must be one of " +
                              machine_model_names() + "; got '" + choice->name + "'");
  }
  if (device.is_cuda()) {
    if (Result<cuda::DeviceFacts> facts = cuda::device_facts(device.index)) return machine_model_for(*facts);
  }
  return chosen ? *chosen : kH200;
}

}  // namespace gemmops::sm90
