// src/sm90/calibration_fit.cpp: a design's Calibration fitted to a sweep (see calibration_fit.hpp)
// SPDX-License-Identifier: Apache-2.0
#include "sm90/calibration_fit.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>

#include "sm90/heuristics.hpp"

namespace gemmops::sm90 {
namespace {

struct Sample {
  KernelProblem problem;
  double measured_us;
};

std::vector<Sample> samples_of(const Sm90Design& design, const std::vector<SweepRow>& rows) {
  const std::string name = design.design.to_string();
  std::vector<Sample> out;
  for (const SweepRow& r : rows) {
    for (size_t i = 0; i < r.designs.size(); ++i) {
      if (r.designs[i] != name || !(r.measured_us[i] > 0)) continue;
      auto kp = map_problem(r.args);
      if (kp) out.push_back({*kp, r.measured_us[i]});
    }
  }
  return out;
}

double log_ratio(const KernelProblem& p, const Sm90Design& d, const MachineModel& m, double measured_us) {
  const double est = estimate_time_us(p, d, m);
  return est > 0 ? std::log(est / measured_us) : 0.0;
}

// The K-grouped scale that centres the K-grouped log errors (the estimate is linear in it).
// Without K-grouped samples the design keeps its scale.
double centred_k_scale(Sm90Design d, const std::vector<Sample>& samples, const MachineModel& m) {
  const double kept = d.calibration.k_grouped_time_scale;
  d.calibration.k_grouped_time_scale = 1.0;
  double sum = 0;
  int n = 0;
  for (const Sample& s : samples) {
    if (s.problem.kind != OperationKind::grouped_k) continue;
    sum += log_ratio(s.problem, d, m, s.measured_us);
    ++n;
  }
  return n ? std::exp(-sum / n) : kept;
}

double mean_square(const Sm90Design& d, const std::vector<Sample>& samples, const MachineModel& m) {
  double sum = 0;
  for (const Sample& s : samples) sum += std::pow(log_ratio(s.problem, d, m, s.measured_us), 2);
  return samples.empty() ? 0.0 : sum / double(samples.size());
}

using Point = std::array<double, 3>;  // main-loop efficiency, bandwidth efficiency, tile overhead us

Calibration with(const Calibration& base, const Point& x) {
  Calibration c = base;
  c.mainloop_efficiency = std::clamp(x[0], 0.2, 1.2);
  c.bandwidth_efficiency = std::clamp(x[1], 0.2, 1.5);
  c.tile_overhead_us = std::clamp(x[2], 0.0, 10.0);
  return c;
}

// Nelder-Mead on a small, smooth-enough objective: a few hundred evaluations.
Point nelder_mead(const std::function<double(const Point&)>& f, Point start, int iterations = 300) {
  std::array<Point, 4> p{start, start, start, start};
  p[1][0] += 0.1;
  p[2][1] += 0.1;
  p[3][2] += 0.5;
  std::array<double, 4> v{};
  for (int i = 0; i < 4; ++i) v[i] = f(p[i]);
  for (int it = 0; it < iterations; ++it) {
    std::array<int, 4> order{0, 1, 2, 3};
    std::sort(order.begin(), order.end(), [&](int a, int b) { return v[a] < v[b]; });
    const int best = order[0], worst = order[3], second = order[2];
    Point centroid{};
    for (int i : {order[0], order[1], order[2]})
      for (int k = 0; k < 3; ++k) centroid[k] += p[i][k] / 3;
    auto along = [&](double t) {
      Point q;
      for (int k = 0; k < 3; ++k) q[k] = centroid[k] + t * (p[worst][k] - centroid[k]);
      return q;
    };
    const Point reflected = along(-1.0);
    const double fr = f(reflected);
    if (fr < v[best]) {
      const Point expanded = along(-2.0);
      const double fe = f(expanded);
      p[worst] = fe < fr ? expanded : reflected;
      v[worst] = std::min(fe, fr);
    } else if (fr < v[second]) {
      p[worst] = reflected;
      v[worst] = fr;
    } else {
      const Point contracted = along(0.5);
      const double fc = f(contracted);
      if (fc < v[worst]) {
        p[worst] = contracted;
        v[worst] = fc;
      } else {  // shrink towards the best
        for (int i : {order[1], order[2], order[3]}) {
          for (int k = 0; k < 3; ++k) p[i][k] = p[best][k] + 0.5 * (p[i][k] - p[best][k]);
          v[i] = f(p[i]);
        }
      }
    }
  }
  return p[static_cast<size_t>(std::min_element(v.begin(), v.end()) - v.begin())];
}

}  // namespace

Calibration fit_calibration(const Sm90Design& design, const std::vector<SweepRow>& rows, const MachineModel& model) {
  const std::vector<Sample> samples = samples_of(design, rows);
  if (samples.empty()) return design.calibration;
  Sm90Design d = design;
  auto objective = [&](const Point& x) {
    d.calibration = with(design.calibration, x);
    d.calibration.k_grouped_time_scale = centred_k_scale(d, samples, model);
    return mean_square(d, samples, model);
  };
  const Calibration& c = design.calibration;
  const Point best = nelder_mead(objective, {c.mainloop_efficiency, c.bandwidth_efficiency, c.tile_overhead_us});
  d.calibration = with(design.calibration, best);
  d.calibration.k_grouped_time_scale = centred_k_scale(d, samples, model);
  return d.calibration;
}

double log_error(const Sm90Design& design, const std::vector<SweepRow>& rows, const MachineModel& model) {
  return std::sqrt(mean_square(design, samples_of(design, rows), model));
}

int rows_timing(const Sm90Design& design, const std::vector<SweepRow>& rows) {
  return static_cast<int>(samples_of(design, rows).size());
}

double pick_loss(const std::vector<Sm90Design>& designs, const std::vector<SweepRow>& rows, const MachineModel& model) {
  double log_sum = 0;
  int counted = 0;
  for (const SweepRow& r : rows) {
    auto kp = map_problem(r.args);
    if (!kp) continue;
    double fastest = std::numeric_limits<double>::infinity(), best_estimate = fastest, picked = 0;
    for (size_t i = 0; i < r.designs.size(); ++i) {
      const auto d = std::find_if(designs.begin(), designs.end(),
                                  [&](const Sm90Design& x) { return x.design.to_string() == r.designs[i]; });
      if (d == designs.end() || !(r.measured_us[i] > 0)) continue;
      fastest = std::min(fastest, r.measured_us[i]);
      const double est = estimate_time_us(*kp, *d, model) + (d->trial ? kTrialPenaltyUs : 0.0);
      if (est < best_estimate) best_estimate = est, picked = r.measured_us[i];
    }
    if (picked > 0) {
      log_sum += std::log(picked / fastest);
      ++counted;
    }
  }
  return counted ? std::exp(log_sum / counted) : 1.0;
}

std::vector<Sm90Design> fitted_designs(std::vector<Sm90Design> designs, const std::vector<SweepRow>& rows,
                                       const MachineModel& model, const std::string& only) {
  for (Sm90Design& d : designs) {
    if (!only.empty() && d.design.to_string() != only) continue;
    d.calibration = fit_calibration(d, rows, model);
    d.trial = false;  // fitted to measurements: no longer a guess
  }
  return designs;
}

std::vector<SweepRow> half_of(const std::vector<SweepRow>& rows, int parity) {
  std::vector<SweepRow> out;
  for (size_t i = 0; i < rows.size(); ++i)
    if (int(i % 2) == parity) out.push_back(rows[i]);
  return out;
}

HeldOutCheck held_out_check(const std::vector<Sm90Design>& current, const std::vector<SweepRow>& rows,
                            const MachineModel& model, const std::string& only) {
  HeldOutCheck check;
  for (int parity : {0, 1}) {
    const std::vector<SweepRow> seen = half_of(rows, parity), held_out = half_of(rows, 1 - parity);
    check.before[parity] = pick_loss(current, held_out, model);
    check.after[parity] = pick_loss(fitted_designs(current, seen, model, only), held_out, model);
  }
  return check;
}

}  // namespace gemmops::sm90
