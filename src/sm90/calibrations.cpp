// src/sm90/calibrations.cpp: per-part calibration tables; the H200's live in the design table
// SPDX-License-Identifier: Apache-2.0
#include "sm90/calibrations.hpp"

#include <array>
#include <string>

namespace gemmops::sm90 {
namespace {

// H100 SXM (also used by h800, h100_pcie and h20): not fitted yet, so empty and every design keeps
// its H200 calibration. Fill it from `gemmops_fit_calibration SWEEP.csv --model h100_sxm` on an
// H100 sweep, taking only a fit whose held-out halves gain (docs/design.md, "The machine model").
constexpr std::array<FittedCalibration, 0> kH100Sxm{};

}  // namespace

std::span<const FittedCalibration> fitted_calibrations(std::string_view set) {
  if (set == "h100_sxm") return kH100Sxm;
  return {};
}

Sm90Design calibrated_for(const Sm90Design& design, const MachineModel& model) {
  const std::span<const FittedCalibration> fitted = fitted_calibrations(model.calibrations);
  if (fitted.empty()) return design;
  const std::string name = design.design.to_string();
  Sm90Design out = design;
  for (const FittedCalibration& f : fitted) {
    if (f.design != name) continue;
    out.calibration = f.calibration;
  }
  return out;
}

}  // namespace gemmops::sm90
