// tools/fit_calibration/sweep_csv.hpp: reading the sweep CSV of bench/bench_grouped.py --sweep into rows
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <istream>
#include <string>
#include <vector>

#include "gemmops/gemmops.hpp"
#include "sm90/calibration_fit.hpp"

namespace gemmops::fit {

/// One CSV record's fields (RFC 4180 quoting: "a, b" and "" inside quotes).
std::vector<std::string> split_csv_line(const std::string& line);

/// "sm90a_grouped_gemm_bf16_f32acc_128x256x64_c2x1_s4_coop" -> "128x256x64_c2x1_s4_coop"; "" for names
/// that are no plain sm90 operator (another provider, or a "+splitN" timing of --split-k).
std::string design_of_operator(const std::string& operator_name);

/// The sweep's rows: columns form,model,scenario,dist,G,TotalM,N,K,operator,rank,us; the lines of one
/// (form, model, scenario, dist, shape) become one row. A malformed line is an error naming it.
Result<std::vector<sm90::SweepRow>> read_sweep(std::istream& in);

}  // namespace gemmops::fit
