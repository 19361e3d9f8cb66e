// src/moe/moe_device.hpp: the device a MoE kernel (route, gather_reduce) launches on, made current and
// checked: the arch-neutral kernels need compute capability 8.0 or later
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

#include "cuda/device.hpp"
#include "cuda/driver_api.hpp"
#include "gemmops/status.hpp"

namespace gemmops::moe {

struct MoeDevice {
  const cuda::DriverApi* api;
  cuda::DeviceFacts facts;
};

/// Makes device `ordinal` current; its driver and facts, or unsupported naming `operand` and `op`
/// ("rows: gather_reduce needs a device of compute capability 8.0 or later; device 0 is 7.5").
Result<MoeDevice> moe_device(int ordinal, const std::string& operand, const std::string& op);

}  // namespace gemmops::moe
