// tools/fit_calibration/main.cpp: gemmops_fit_calibration SWEEP.csv [--only DESIGN]: fits every sm90
// design's calibration to a sweep (bench/bench_grouped.py --sweep, forward and weight-gradient rows in
// one file or several concatenated without their extra headers) and prints the table lines for
// src/sm90/designs.cpp, each design's log error before and after, and the pick loss (the first pick's
// time over the fastest, geometric mean) before and after, also on the half of the rows each fit
// did not see (rows alternately in two halves: a fit on one, scored on the other).
// SPDX-License-Identifier: Apache-2.0
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "sm90/calibration_fit.hpp"
#include "sm90/designs.hpp"
#include "sweep_csv.hpp"

namespace {

using gemmops::sm90::Sm90Design;
using gemmops::sm90::SweepRow;

std::vector<Sm90Design> fitted(std::vector<Sm90Design> designs, const std::vector<SweepRow>& rows,
                               const std::string& only) {
  for (Sm90Design& d : designs) {
    if (!only.empty() && d.design.to_string() != only) continue;
    d.calibration = gemmops::sm90::fit_calibration(d, rows);
    d.trial = false;  // fitted to measurements: no longer a guess
  }
  return designs;
}

std::vector<SweepRow> half(const std::vector<SweepRow>& rows, int parity) {
  std::vector<SweepRow> out;
  for (size_t i = 0; i < rows.size(); ++i)
    if (int(i % 2) == parity) out.push_back(rows[i]);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help") {
    std::fprintf(stderr, "usage: gemmops_fit_calibration SWEEP.csv [--only DESIGN]\n");
    return argc < 2 ? 2 : 0;
  }
  const std::string only = argc >= 4 && std::string(argv[2]) == "--only" ? argv[3] : "";
  std::ifstream in(argv[1]);
  if (!in) {
    std::fprintf(stderr, "error: cannot read %s\n", argv[1]);
    return 2;
  }
  auto rows = gemmops::fit::read_sweep(in);
  if (!rows) {
    std::fprintf(stderr, "error: %s\n", rows.status().to_string().c_str());
    return 2;
  }
  const std::vector<Sm90Design> before(gemmops::sm90::sm90_designs().begin(), gemmops::sm90::sm90_designs().end());
  const std::vector<Sm90Design> after = fitted(before, *rows, only);
  std::printf("%zu rows\n\n%-40s %5s %10s %10s   fitted calibration\n", rows->size(), "design", "rows", "log err",
              "after");
  for (size_t i = 0; i < before.size(); ++i) {
    const auto& c = after[i].calibration;
    const int timed = gemmops::sm90::rows_timing(before[i], *rows);
    if (timed == 0) {
      std::printf("%-40s %5d %10s %10s   (not timed: kept)\n", before[i].design.to_string().c_str(), 0, "-", "-");
      continue;
    }
    std::printf("%-40s %5d %10.3f %10.3f   {.mainloop_efficiency = %.3f, .bandwidth_efficiency = %.3f, "
                ".tile_overhead_us = %.2f, .k_grouped_time_scale = %.3f}\n",
                before[i].design.to_string().c_str(), timed, gemmops::sm90::log_error(before[i], *rows),
                gemmops::sm90::log_error(after[i], *rows), c.mainloop_efficiency, c.bandwidth_efficiency,
                c.tile_overhead_us, c.k_grouped_time_scale);
  }
  std::printf("\npick loss: %.4f before, %.4f after (trial designs ranked last before, as timed after)\n",
              gemmops::sm90::pick_loss(before, *rows), gemmops::sm90::pick_loss(after, *rows));
  for (int parity : {0, 1}) {
    const auto fit_half = half(*rows, parity), held_out = half(*rows, 1 - parity);
    std::printf("held out (fit on half %d, %zu rows; scored on the other %zu): %.4f before, %.4f after\n", parity,
                fit_half.size(), held_out.size(), gemmops::sm90::pick_loss(before, held_out),
                gemmops::sm90::pick_loss(fitted(before, fit_half, only), held_out));
  }
  return 0;
}
