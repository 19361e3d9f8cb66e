// tools/fit_calibration/main.cpp: gemmops_fit_calibration SWEEP.csv [--model NAME] [--only DESIGN]: fits
// every sm90 design's calibration to a sweep of one part (bench/bench_grouped.py --sweep, forward and
// weight-gradient rows in one file or several concatenated without their extra headers) on that part's
// machine model (default h200), and prints each design's log error before and after, the lines for that
// model's calibration table, the pick loss (the first pick's time over the fastest, geometric mean)
// before and after, the same on the half of the rows each fit did not see (rows alternately in two
// halves: a fit on one, scored on the other), and whether to take the fit: only when both held-out
// halves gain. --balanced routed fits and scores the ranking with routing's noise as its balanced
// assumption (MachineModel::balanced_sizes), for sweeps with routed rows (--dists routed).
// SPDX-License-Identifier: Apache-2.0
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "sm90/calibration_fit.hpp"
#include "sm90/calibrations.hpp"
#include "sm90/designs.hpp"
#include "sm90/machine_models.hpp"
#include "sweep_csv.hpp"

namespace {

using gemmops::sm90::Calibration;
using gemmops::sm90::MachineModel;
using gemmops::sm90::Sm90Design;

struct Options {
  std::string sweep, model = "h200", only, balanced;
};

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--model" || a == "--only") && i + 1 < argc) (a == "--model" ? o->model : o->only) = argv[++i];
    else if (a == "--balanced" && i + 1 < argc) o->balanced = argv[++i];
    else if (a.rfind("--", 0) != 0 && o->sweep.empty()) o->sweep = a;
    else return false;
  }
  return !o->sweep.empty();
}

// The h200 calibrations are the design table's own (designs.cpp); other parts' go in calibrations.cpp.
void print_line(const MachineModel& m, const Sm90Design& d, const Calibration& c) {
  const std::string fields = "{.mainloop_efficiency = %.3f, .bandwidth_efficiency = %.3f, .tile_overhead_us = %.2f, "
                             ".k_grouped_time_scale = %.3f}";
  if (m.calibrations == "h200") {
    std::printf(("  %s: .calibration = " + fields + "\n").c_str(), d.design.to_string().c_str(), c.mainloop_efficiency,
                c.bandwidth_efficiency, c.tile_overhead_us, c.k_grouped_time_scale);
  } else {
    std::printf(("    {.design = \"%s\", .calibration = " + fields + "},\n").c_str(), d.design.to_string().c_str(),
                c.mainloop_efficiency, c.bandwidth_efficiency, c.tile_overhead_us, c.k_grouped_time_scale);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (argc < 2 || std::string(argv[1]) == "--help" || !parse(argc, argv, &o)) {
    std::fprintf(stderr, "usage: gemmops_fit_calibration SWEEP.csv [--model NAME] [--only DESIGN] [--balanced even|routed]"
                         "   (NAME: %s; default h200)\n",
                 gemmops::sm90::machine_model_names().c_str());
    return argc >= 2 && std::string(argv[1]) == "--help" ? 0 : 2;
  }
  auto model = gemmops::sm90::machine_model_named(o.model);
  if (!model) {
    std::fprintf(stderr, "error: --model must be one of %s; got '%s'\n", gemmops::sm90::machine_model_names().c_str(),
                 o.model.c_str());
    return 2;
  }
  // --balanced: the ranking's balanced assumption to fit and score with (routed: routing's noise).
  if (!o.balanced.empty() && o.balanced != "even" && o.balanced != "routed") {
    std::fprintf(stderr, "error: --balanced must be even or routed; got '%s'\n", o.balanced.c_str());
    return 2;
  }
  if (o.balanced == "routed") model->balanced_sizes = gemmops::sm90::GroupSizes::routed;
  if (o.balanced == "even") model->balanced_sizes = gemmops::sm90::GroupSizes::even;
  std::ifstream in(o.sweep);
  if (!in) {
    std::fprintf(stderr, "error: cannot read %s\n", o.sweep.c_str());
    return 2;
  }
  auto rows = gemmops::fit::read_sweep(in);
  if (!rows) {
    std::fprintf(stderr, "error: %s\n", rows.status().to_string().c_str());
    return 2;
  }
  // Before: the calibrations the model uses now (its part's fit, else the design table's).
  std::vector<Sm90Design> before;
  for (const Sm90Design& d : gemmops::sm90::sm90_designs()) before.push_back(gemmops::sm90::calibrated_for(d, *model));
  const std::vector<Sm90Design> after = gemmops::sm90::fitted_designs(before, *rows, *model, o.only);
  std::printf("%zu rows, machine model %s (calibrations of %s), balanced sizes %s\n\n%-40s %5s %10s %10s\n",
              rows->size(), std::string(model->name).c_str(), std::string(model->calibrations).c_str(),
              model->balanced_sizes == gemmops::sm90::GroupSizes::routed ? "routed" : "even", "design", "rows",
              "log err", "after");
  for (size_t i = 0; i < before.size(); ++i) {
    const int timed = gemmops::sm90::rows_timing(before[i], *rows);
    if (timed == 0) {
      std::printf("%-40s %5d %10s %10s   (not timed: kept)\n", before[i].design.to_string().c_str(), 0, "-", "-");
      continue;
    }
    std::printf("%-40s %5d %10.3f %10.3f\n", before[i].design.to_string().c_str(), timed,
                gemmops::sm90::log_error(before[i], *rows, *model), gemmops::sm90::log_error(after[i], *rows, *model));
  }
  std::printf("\nfitted calibrations (%s):\n", model->calibrations == "h200" ? "src/sm90/designs.cpp"
                                                                             : "src/sm90/calibrations.cpp");
  for (size_t i = 0; i < after.size(); ++i)
    if (gemmops::sm90::rows_timing(before[i], *rows) > 0) print_line(*model, after[i], after[i].calibration);
  std::printf("\npick loss: %.4f before, %.4f after (trial designs ranked last before, as timed after)\n",
              gemmops::sm90::pick_loss(before, *rows, *model), gemmops::sm90::pick_loss(after, *rows, *model));
  const gemmops::sm90::HeldOutCheck check = gemmops::sm90::held_out_check(before, *rows, *model, o.only);
  for (int parity : {0, 1})
    std::printf("held out (fit on half %d, scored on the other): %.4f before, %.4f after\n", parity,
                check.before[parity], check.after[parity]);
  std::printf("\n%s\n", check.gains() ? "take the fit: both held-out halves gain"
                                      : "keep the current calibrations: the fit does not gain on both held-out halves");
  return 0;
}
