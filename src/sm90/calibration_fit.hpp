// src/sm90/calibration_fit.hpp: fitting a design's Calibration to measured times (a sweep of every design
// on the MoE shapes, bench/bench_grouped.py --sweep), and the loss of the first pick it leads to
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <vector>

#include "sm90/designs.hpp"
#include "sm90/kernel_problem.hpp"
#include "sm90/machine_model.hpp"

namespace gemmops::sm90 {

/// One measured row of a sweep: a problem (its arguments own what the KernelProblem points into)
/// and each design's time on it.
struct SweepRow {
  std::string key;                      ///< form, model, scenario, distribution: one row of the sweep
  Arguments args;                       ///< fake tensors with the row's shapes
  std::vector<std::string> designs;     ///< Design::to_string() of each design timed on it
  std::vector<double> measured_us;      ///< its time, parallel to designs
};

/// Every function here estimates on `model`, the machine model of the part the sweep was timed on,
/// with the designs' calibrations as given (calibrated_for() gives a part's current ones).

/// The calibration of `design` that makes its estimates closest to its measured times on `rows`
/// (least squares of log(estimate / measured), Nelder-Mead over the main-loop and bandwidth
/// efficiencies and the per-tile overhead, the K-grouped scale in closed form). Rows that did not
/// time the design are ignored; without any, the design's calibration is returned unchanged.
Calibration fit_calibration(const Sm90Design& design, const std::vector<SweepRow>& rows, const MachineModel& model);

/// Root mean square of log(estimate / measured) of `design` over the rows that timed it (0: none).
double log_error(const Sm90Design& design, const std::vector<SweepRow>& rows, const MachineModel& model);
/// How many of the rows timed `design`.
int rows_timing(const Sm90Design& design, const std::vector<SweepRow>& rows);

/// The pick loss: per row, the measured time of the design with the smallest estimate over the
/// fastest measured time, as a geometric mean over the rows (1: every pick the fastest). Only the
/// designs of `designs` that a row timed compete in it.
double pick_loss(const std::vector<Sm90Design>& designs, const std::vector<SweepRow>& rows, const MachineModel& model);

/// `designs` with every design (or only the one named `only`, when not empty) fitted to `rows`; a
/// fitted design is no longer a trial (its calibration is measured, not guessed).
std::vector<Sm90Design> fitted_designs(std::vector<Sm90Design> designs, const std::vector<SweepRow>& rows,
                                       const MachineModel& model, const std::string& only = "");

/// The rows at even (parity 0) or odd (1) places: the two halves of the held-out check.
std::vector<SweepRow> half_of(const std::vector<SweepRow>& rows, int parity);

/// A fit scored on rows it did not see: for each half, fitted on it and the pick loss taken on the
/// other half, before (the current calibrations) and after.
struct HeldOutCheck {
  double before[2] = {1, 1};
  double after[2] = {1, 1};
  /// Whether the fit is taken: the pick loss falls on both held-out halves (a fit that only matches
  /// the rows it saw is not).
  bool gains() const { return after[0] < before[0] && after[1] < before[1]; }
};
HeldOutCheck held_out_check(const std::vector<Sm90Design>& current, const std::vector<SweepRow>& rows,
                            const MachineModel& model, const std::string& only = "");

}  // namespace gemmops::sm90
