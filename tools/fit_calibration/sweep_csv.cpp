// tools/fit_calibration/sweep_csv.cpp: the sweep CSV read into rows with fake arguments of their shapes
// SPDX-License-Identifier: Apache-2.0
#include "sweep_csv.hpp"

#include <charconv>
#include <map>

namespace gemmops::fit {
namespace {

bool to_int(const std::string& s, int64_t& v) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && v >= 0;
}

// The forward (M-grouped), data-gradient (M-grouped, N-major B) and weight-gradient (K-grouped)
// problems bench_grouped.py times, as fakes; (G, TotalM, N, K) is the forward's shape in each.
Arguments problem(const std::string& form, int64_t G, int64_t total_m, int64_t n, int64_t k) {
  const Device cuda = Device::cuda(0);
  if (form == "dgrad")  // dX (TotalM, K) = dY (TotalM, N) @ W^T: the forward's B storage (G, N, K), read N-major
    return GroupedGemmArguments{TensorDesc::contiguous(DType::bf16, {total_m, n}, cuda),
                                TensorDesc::contiguous(DType::bf16, {G, n, k}, cuda),
                                TensorDesc::contiguous(DType::bf16, {total_m, k}, cuda), DType::fp32,
                                TensorDesc::contiguous(DType::i32, {G}, cuda)};
  if (form == "wgrad")
    return GroupedGemmArguments{TensorDesc(DType::bf16, {k, total_m}, {1, k}, cuda),
                                TensorDesc::contiguous(DType::bf16, {total_m, n}, cuda),
                                TensorDesc::contiguous(DType::bf16, {G, k, n}, cuda), DType::fp32,
                                TensorDesc::contiguous(DType::i32, {G}, cuda)};
  return GroupedGemmArguments{TensorDesc::contiguous(DType::bf16, {total_m, k}, cuda),
                              TensorDesc(DType::bf16, {G, k, n}, {n * k, 1, k}, cuda),
                              TensorDesc::contiguous(DType::bf16, {total_m, n}, cuda), DType::fp32,
                              TensorDesc::contiguous(DType::i32, {G}, cuda)};
}

}  // namespace

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else if (c != '\r') {
      fields.back() += c;
    }
  }
  return fields;
}

std::string design_of_operator(const std::string& name) {
  if (name.rfind("sm90a_", 0) != 0 || name.find('+') != std::string::npos) return "";
  const std::string marker = "f32acc_";
  const size_t at = name.find(marker);
  return at == std::string::npos ? "" : name.substr(at + marker.size());
}

Result<std::vector<sm90::SweepRow>> read_sweep(std::istream& in) {
  std::string line;
  if (!std::getline(in, line) || split_csv_line(line).size() != 11 || split_csv_line(line)[0] != "form")
    return invalid_argument("sweep: the first line must be the header form,model,scenario,dist,G,TotalM,N,K,operator,rank,us");
  std::vector<sm90::SweepRow> rows;
  std::map<std::string, size_t> index;
  for (int number = 2; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    const auto f = split_csv_line(line);
    int64_t G = 0, M = 0, N = 0, K = 0;
    double us = 0;
    bool ok = f.size() == 11 && to_int(f[4], G) && to_int(f[5], M) && to_int(f[6], N) && to_int(f[7], K) && G > 0;
    if (ok) {
      try {
        us = std::stod(f[10]);
      } catch (...) {
        ok = false;
      }
    }
    if (!ok) return invalid_argument("sweep: line " + std::to_string(number) + " is not 11 fields with G, TotalM, N, K whole and us a number");
    const std::string design = design_of_operator(f[8]);
    if (design.empty()) continue;
    const std::string key = f[0] + "|" + f[1] + "|" + f[2] + "|" + f[3] + "|" + f[4] + "|" + f[5] + "|" + f[6] + "|" + f[7];
    auto [it, added] = index.try_emplace(key, rows.size());
    if (added) rows.push_back({key, problem(f[0], G, M, N, K), {}, {}});
    rows[it->second].designs.push_back(design);
    rows[it->second].measured_us.push_back(us);
  }
  return rows;
}

}  // namespace gemmops::fit
