// src/sm90/calibrations.cpp: per-part calibration tables; the H200's live in the design table
// SPDX-License-Identifier: Apache-2.0
#include "sm90/calibrations.hpp"

#include <array>
#include <string>

namespace gemmops::sm90 {
namespace {

// H100 SXM (also used by h800, h100_pcie and h20): fitted by `gemmops_fit_calibration SWEEP.csv
// --model h100_sxm` on an H100 80GB HBM3 sweep of the 80-shape set (forward, weight gradient and
// data gradient, uniform and Zipf; 2026-12-07). Pick loss 1.051 -> 1.021; held-out halves
// 1.062 -> 1.029 and 1.041 -> 1.024. Designs not timed there keep their H200 calibration.
constexpr std::array<FittedCalibration, 14> kH100Sxm{{
    {.design = "128x256x64_c2x1_s4_coop", .calibration = {.mainloop_efficiency = 1.046, .bandwidth_efficiency = 1.034, .tile_overhead_us = 0.00, .k_grouped_time_scale = 0.926}},
    {.design = "128x128x64_c2x1_s6_coop", .calibration = {.mainloop_efficiency = 0.849, .bandwidth_efficiency = 0.911, .tile_overhead_us = 0.00, .k_grouped_time_scale = 0.993}},
    {.design = "128x256x64_c2x1_s3_coop_tma", .calibration = {.mainloop_efficiency = 1.200, .bandwidth_efficiency = 1.157, .tile_overhead_us = 0.00, .k_grouped_time_scale = 1.183}},
    {.design = "128x256x64_c2x1_s4_coop_tma_ring2", .calibration = {.mainloop_efficiency = 1.031, .bandwidth_efficiency = 0.985, .tile_overhead_us = 0.00, .k_grouped_time_scale = 1.011}},
    {.design = "128x256x64_c1x1_s4_coop_tma_ring2", .calibration = {.mainloop_efficiency = 1.017, .bandwidth_efficiency = 0.927, .tile_overhead_us = 0.70, .k_grouped_time_scale = 0.946}},
    {.design = "128x128x64_c2x1_s5_coop_tma", .calibration = {.mainloop_efficiency = 0.824, .bandwidth_efficiency = 0.998, .tile_overhead_us = 0.00, .k_grouped_time_scale = 1.039}},
    {.design = "128x256x64_c1x1_s4_coop", .calibration = {.mainloop_efficiency = 1.008, .bandwidth_efficiency = 0.932, .tile_overhead_us = 0.00, .k_grouped_time_scale = 0.898}},
    {.design = "128x128x64_c1x1_s6_coop", .calibration = {.mainloop_efficiency = 0.783, .bandwidth_efficiency = 0.916, .tile_overhead_us = 0.00, .k_grouped_time_scale = 0.934}},
    {.design = "128x128x64_c1x1_s6_pingpong", .calibration = {.mainloop_efficiency = 0.801, .bandwidth_efficiency = 0.913, .tile_overhead_us = 1.58, .k_grouped_time_scale = 1.009}},
    {.design = "64x256x64_c1x1_s5_pingpong", .calibration = {.mainloop_efficiency = 0.809, .bandwidth_efficiency = 0.935, .tile_overhead_us = 1.88, .k_grouped_time_scale = 0.897}},
    {.design = "64x256x64_c2x1_s5_pingpong", .calibration = {.mainloop_efficiency = 0.845, .bandwidth_efficiency = 1.225, .tile_overhead_us = 1.67, .k_grouped_time_scale = 0.997}},
    {.design = "128x128x64_c1x1_s4_pingpong_tma", .calibration = {.mainloop_efficiency = 0.809, .bandwidth_efficiency = 1.046, .tile_overhead_us = 0.29, .k_grouped_time_scale = 1.056}},
    {.design = "64x128x64_c1x1_s8_smallm", .calibration = {.mainloop_efficiency = 0.569, .bandwidth_efficiency = 0.952, .tile_overhead_us = 0.51, .k_grouped_time_scale = 0.973}},
    {.design = "64x256x64_c1x1_s5_smallm", .calibration = {.mainloop_efficiency = 0.759, .bandwidth_efficiency = 0.950, .tile_overhead_us = 1.14, .k_grouped_time_scale = 0.951}},
}};

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
