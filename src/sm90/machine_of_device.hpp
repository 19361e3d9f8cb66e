// src/sm90/machine_of_device.hpp: which machine model an estimate uses: the device's, else the one named, else h200
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "gemmops/status.hpp"
#include "gemmops/target.hpp"
#include "gemmops/tensor.hpp"
#include "sm90/machine_model.hpp"

namespace gemmops::sm90 {

/// The model for arguments on `device`: the device's own (machine_model_for its facts) when the
/// driver knows it; else the one the target names ("90a:h100_sxm", `target` may be null), else
/// GEMMOPS_MACHINE_MODEL; else h200 (today's rankings, CI's). A name that is no model is refused,
/// device or not, with the variable (or target) and the valid names, so that a typo is never silent.
Result<MachineModel> machine_model_of(const Device& device, const Target* target);

}  // namespace gemmops::sm90
