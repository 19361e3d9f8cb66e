// src/sm90/calibrations.hpp: the per-design calibrations of each machine model (fitted per part)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <span>
#include <string_view>

#include "sm90/designs.hpp"
#include "sm90/machine_model.hpp"

namespace gemmops::sm90 {

/// One design's calibration fitted on a sweep of one part: the line gemmops_fit_calibration prints.
struct FittedCalibration {
  std::string_view design;  ///< Design::to_string(), e.g. "128x256x64_c2x1_s4_coop"
  Calibration calibration;
};

/// The calibrations fitted on sweeps of the part `set` names (MachineModel::calibrations). "h200"'s
/// are the design table's own (designs.cpp), so its list is empty, as is any part's not yet fitted.
std::span<const FittedCalibration> fitted_calibrations(std::string_view set);

/// `design` with the calibration `model` uses: its set's fit of that design where there is one,
/// else the design table's (fitted on H200). Whether it is a trial (a kernel not yet run) is unchanged.
Sm90Design calibrated_for(const Sm90Design& design, const MachineModel& model);

}  // namespace gemmops::sm90
