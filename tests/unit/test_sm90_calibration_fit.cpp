// tests/unit/test_sm90_calibration_fit.cpp: the calibration fit (src/sm90/calibration_fit.cpp) and the
// sweep reader of tools/fit_calibration, on sweeps made from the estimate with known calibrations
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "sm90/calibration_fit.hpp"
#include "sm90/designs.hpp"
#include "sm90/heuristics.hpp"
#include "sm90/machine_models.hpp"
#include "sweep_csv.hpp"

namespace gemmops::sm90 {
namespace {

// (form, G, TotalM, N, K) of MoE rows: compute-bound, decode, down projections, weight gradients.
struct Shape {
  const char* form;
  int64_t G, M, N, K;
};
const Shape kShapes[] = {{"fwd", 12, 8192, 2048, 1024},  {"fwd", 4, 32768, 4096, 7168}, {"fwd", 128, 32768, 1536, 2048},
                         {"fwd", 128, 32768, 2048, 768}, {"fwd", 64, 512, 4096, 7168},  {"fwd", 128, 16384, 5760, 2880},
                         {"fwd", 8, 65536, 14336, 4096}, {"fwd", 32, 4096, 7168, 2048}, {"wgrad", 12, 8192, 2048, 1024},
                         {"wgrad", 128, 32768, 1536, 2048}, {"wgrad", 32, 16384, 4096, 7168},
                         {"dgrad", 128, 32768, 1536, 2048}, {"dgrad", 8, 65536, 14336, 4096}};

// A sweep CSV whose times are `truth`'s estimates (times `noise` on alternate rows).
std::string sweep_of(const std::vector<Sm90Design>& truth, double noise = 1.0) {
  std::ostringstream csv;
  csv << "form,model,scenario,dist,G,TotalM,N,K,operator,rank,us\n";
  int line = 0;
  for (const Shape& s : kShapes) {
    std::istringstream one("form,model,scenario,dist,G,TotalM,N,K,operator,rank,us\n" + std::string(s.form) +
                           ",m,\"a, b\",uniform," + std::to_string(s.G) + "," + std::to_string(s.M) + "," +
                           std::to_string(s.N) + "," + std::to_string(s.K) + ",sm90a_grouped_gemm_bf16_f32acc_x,0,1\n");
    auto rows = fit::read_sweep(one);
    EXPECT_TRUE(rows && rows->size() == 1);
    auto kp = map_problem(rows->front().args);
    EXPECT_TRUE(kp) << kp.status().to_string();
    for (const Sm90Design& d : truth) {
      const double us = estimate_time_us(*kp, d, kH200) * (line++ % 2 ? noise : 1.0 / noise);
      csv << s.form << ",m,\"a, b\",uniform," << s.G << "," << s.M << "," << s.N << "," << s.K
          << ",sm90a_grouped_gemm_bf16_f32acc_" << d.design.to_string() << ",0," << us << "\n";
    }
  }
  return csv.str();
}

std::vector<SweepRow> read(const std::string& text) {
  std::istringstream in(text);
  auto rows = fit::read_sweep(in);
  EXPECT_TRUE(rows) << rows.status().to_string();
  return rows ? *rows : std::vector<SweepRow>{};
}

std::vector<Sm90Design> table() { return {sm90_designs().begin(), sm90_designs().end()}; }

TEST(Sm90CalibrationFit, recovers_the_calibration_that_made_the_times) {
  std::vector<Sm90Design> truth = table();
  const std::vector<SweepRow> rows = read(sweep_of(truth));
  ASSERT_EQ(rows.size(), std::size(kShapes));
  for (size_t i = 0; i < 3; ++i) {  // three designs started from a wrong guess
    Sm90Design guess = truth[i];
    guess.calibration.mainloop_efficiency *= 0.7;
    guess.calibration.tile_overhead_us += 1.0;
    guess.calibration.k_grouped_time_scale = 1.3;
    EXPECT_GT(log_error(guess, rows, kH200), 0.05) << guess.design.to_string();
    guess.calibration = fit_calibration(guess, rows, kH200);
    EXPECT_LT(log_error(guess, rows, kH200), 0.01) << guess.design.to_string();
  }
}

TEST(Sm90CalibrationFit, pick_loss_is_one_when_estimates_are_the_times) {
  const std::vector<Sm90Design> truth = table();
  const std::vector<SweepRow> rows = read(sweep_of(truth));
  std::vector<Sm90Design> timed = truth;
  for (Sm90Design& d : timed) d.trial = false;
  EXPECT_DOUBLE_EQ(pick_loss(timed, rows, kH200), 1.0);
  // A design made to look far better than it runs is picked where it is slow: a loss above 1.
  timed[0].calibration.mainloop_efficiency = 5.0;
  timed[0].calibration.bandwidth_efficiency = 5.0;
  EXPECT_GT(pick_loss(timed, rows, kH200), 1.0);
}

TEST(Sm90CalibrationFit, a_design_without_rows_keeps_its_calibration) {
  const Sm90Design d = table().front();
  const Calibration c = fit_calibration(d, {}, kH200);
  EXPECT_EQ(c.mainloop_efficiency, d.calibration.mainloop_efficiency);
  EXPECT_EQ(log_error(d, {}, kH200), 0.0);
}

TEST(Sm90CalibrationFit, forward_rows_alone_keep_the_k_grouped_scale) {
  std::vector<SweepRow> forward;
  for (const SweepRow& r : read(sweep_of(table())))
    if (r.key.rfind("fwd", 0) == 0) forward.push_back(r);
  ASSERT_FALSE(forward.empty());
  Sm90Design d = table().front();
  d.calibration.k_grouped_time_scale = 1.23;
  EXPECT_EQ(fit_calibration(d, forward, kH200).k_grouped_time_scale, 1.23);
  EXPECT_EQ(rows_timing(d, forward), static_cast<int>(forward.size()));
}

std::vector<Sm90Design> timed_table() {
  std::vector<Sm90Design> t = table();
  for (Sm90Design& d : t) d.trial = false;
  return t;
}

TEST(Sm90HeldOutCheck, refuses_a_fit_that_cannot_gain) {
  // The times are the current table's estimates: every pick is already the fastest on both halves.
  const std::vector<Sm90Design> current = timed_table();
  const std::vector<SweepRow> rows = read(sweep_of(current));
  const HeldOutCheck check = held_out_check(current, rows, kH200);
  EXPECT_DOUBLE_EQ(check.before[0], 1.0);
  EXPECT_DOUBLE_EQ(check.before[1], 1.0);
  EXPECT_FALSE(check.gains());
}

TEST(Sm90HeldOutCheck, takes_a_fit_that_gains_on_both_halves) {
  // The part runs every other design's main loop at 60% of what the table says: the table picks
  // them where they are slow, on both halves; a fit on either half recovers them for the other.
  const std::vector<Sm90Design> current = timed_table();
  std::vector<Sm90Design> truth = current;
  for (size_t i = 0; i < truth.size(); i += 2) truth[i].calibration.mainloop_efficiency *= 0.6;
  const std::vector<SweepRow> rows = read(sweep_of(truth));
  const HeldOutCheck check = held_out_check(current, rows, kH200);
  EXPECT_GT(check.before[0], 1.0);
  EXPECT_GT(check.before[1], 1.0);
  EXPECT_TRUE(check.gains()) << check.before[0] << " -> " << check.after[0] << ", " << check.before[1] << " -> "
                             << check.after[1];
}

TEST(Sm90CalibrationFit, fits_on_the_model_of_the_part_swept) {
  // Times made on the h100_sxm model: its estimates match them exactly, the h200 model's do not
  // (its memory is faster).
  const MachineModel h100 = *machine_model_named("h100_sxm");
  std::vector<Sm90Design> designs = timed_table();
  std::ostringstream csv;
  csv << "form,model,scenario,dist,G,TotalM,N,K,operator,rank,us\n";
  for (const Shape& s : kShapes) {
    std::istringstream one("form,model,scenario,dist,G,TotalM,N,K,operator,rank,us\n" + std::string(s.form) + ",m,s,u," +
                           std::to_string(s.G) + "," + std::to_string(s.M) + "," + std::to_string(s.N) + "," +
                           std::to_string(s.K) + ",sm90a_grouped_gemm_bf16_f32acc_x,0,1\n");
    const auto sweep = fit::read_sweep(one);  // kept alive: the problem points into its offsets
    const auto kp = map_problem(sweep->front().args);
    csv << s.form << ",m,s,u," << s.G << "," << s.M << "," << s.N << "," << s.K << ",sm90a_grouped_gemm_bf16_f32acc_"
        << designs[0].design.to_string() << ",0," << estimate_time_us(*kp, designs[0], h100) << "\n";
  }
  const std::vector<SweepRow> rows = read(csv.str());
  EXPECT_LT(log_error(designs[0], rows, h100), 1e-4);  // the CSV keeps six digits
  EXPECT_GT(log_error(designs[0], rows, kH200), 0.05);
}

TEST(SweepCsv, reads_quoted_fields_and_groups_lines_into_rows) {
  EXPECT_EQ(fit::split_csv_line("a,\"b, c\",\"d \"\"e\"\"\""), (std::vector<std::string>{"a", "b, c", "d \"e\""}));
  const auto rows = read(
      "form,model,scenario,dist,G,TotalM,N,K,operator,rank,us\n"
      "fwd,m,\"s, 1\",zipf,4,256,128,64,sm90a_grouped_gemm_bf16_f32acc_128x128x64_c1x1_s6_pingpong,0,10.5\n"
      "fwd,m,\"s, 1\",zipf,4,256,128,64,sm90a_grouped_gemm_bf16_f32acc_64x256x64_c1x1_s5_pingpong,1,12\n"
      "fwd,m,\"s, 1\",zipf,4,256,128,64,sm90a_grouped_gemm_bf16_f32acc_64x256x64_c1x1_s5_pingpong+split2,1,9\n"
      "wgrad,m,\"s, 1\",zipf,4,256,128,64,sm90a_grouped_gemm_bf16_f32acc_128x128x64_c1x1_s6_pingpong,0,30\n");
  ASSERT_EQ(rows.size(), 2u);  // the forward and the weight-gradient row; the split-K timing left out
  EXPECT_EQ(rows[0].designs, (std::vector<std::string>{"128x128x64_c1x1_s6_pingpong", "64x256x64_c1x1_s5_pingpong"}));
  EXPECT_EQ(rows[0].measured_us, (std::vector<double>{10.5, 12.0}));
  EXPECT_EQ(std::get<GroupedGemmArguments>(rows[1].args).out.shape, (std::vector<int64_t>{4, 64, 128}));
}

TEST(SweepCsv, a_dgrad_row_is_the_forward_shape_read_with_an_n_major_b) {
  const auto rows = read("form,model,scenario,dist,G,TotalM,N,K,operator,rank,us\n"
                         "dgrad,m,s,uniform,8,4096,1536,2048,sm90a_grouped_gemm_bf16_f32acc_x,0,1\n");
  ASSERT_EQ(rows.size(), 1u);
  const auto& g = std::get<GroupedGemmArguments>(rows.front().args);
  EXPECT_EQ(g.A.shape, (std::vector<int64_t>{4096, 1536}));  // dY (TotalM, N)
  EXPECT_EQ(g.B.shape, (std::vector<int64_t>{8, 1536, 2048}));  // W as stored (G, N, K): N-major
  EXPECT_EQ(g.B.strides, (std::vector<int64_t>{1536 * 2048, 2048, 1}));
  EXPECT_EQ(g.out.shape, (std::vector<int64_t>{4096, 2048}));  // dX (TotalM, K)
}

TEST(SweepCsv, a_malformed_line_is_an_error_naming_it) {
  std::istringstream bad("form,model,scenario,dist,G,TotalM,N,K,operator,rank,us\nfwd,m,s,u,four,256,128,64,x,0,1\n");
  auto rows = fit::read_sweep(bad);
  ASSERT_FALSE(rows);
  EXPECT_NE(rows.status().message().find("line 2"), std::string::npos) << rows.status().to_string();
  std::istringstream no_header("fwd,m,s,u,4,256,128,64,x,0,1\n");
  EXPECT_FALSE(fit::read_sweep(no_header));
}

}  // namespace
}  // namespace gemmops::sm90
