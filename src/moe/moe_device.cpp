// src/moe/moe_device.cpp: the device a MoE kernel launches on, made current and checked
// SPDX-License-Identifier: Apache-2.0
#include "moe/moe_device.hpp"

#include "cuda/context.hpp"

namespace gemmops::moe {

Result<MoeDevice> moe_device(int ordinal, const std::string& operand, const std::string& op) {
  constexpr int kMinCc = 80;  // cvt.rn.bf16.f32 (gather_reduce); __match_any_sync (route) needs 7.0
  GEMMOPS_TRY(cuda::make_current(ordinal));
  GEMMOPS_ASSIGN_OR_RETURN(const cuda::DriverApi* api, cuda::driver());
  GEMMOPS_ASSIGN_OR_RETURN(cuda::DeviceFacts facts, cuda::device_facts(ordinal));
  if (facts.cc < kMinCc) {
    return unsupported(operand + ": " + op + " needs a device of compute capability 8.0 or later; device " +
                       std::to_string(ordinal) + " is " + std::to_string(facts.cc / 10) + "." +
                       std::to_string(facts.cc % 10));
  }
  return MoeDevice{api, facts};
}

}  // namespace gemmops::moe
