// tools/gemmops/problem_spec.hpp: the options of `gemmops run` and `gemmops list`, parsed from argv
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "gemmops/arguments.hpp"
#include "gemmops/dtype.hpp"
#include "gemmops/status.hpp"
#include "gemmops/target.hpp"
#include "gemmops/tensor.hpp"

namespace gemmops::cli {

/// How group sizes are drawn: `uniform` (equal sizes), `zipf` (1/rank^1.2, shuffled), `skewed`
/// (Zipf-like with about a quarter of the groups empty), `empty` (every group empty).
enum class Distribution { uniform, skewed, zipf, empty };
std::string_view name(Distribution d);

enum class DeviceChoice { automatic, cpu, cuda };

/// One problem and how to run it. The defaults are the seed problem: M-grouped, TotalM=8192, G=12,
/// K=1024, N=2048, bf16 in and out, fp32 accumulate, B K-major.
struct ProblemSpec {
  OperationKind op = OperationKind::grouped_m;
  int64_t total_m = 8192;  ///< A's rows (grouped_m), M (grouped_k, grouped_n, gemm), M of all batches (batched)
  int64_t groups = 12;     ///< G, or L for batched (8 unless given; total_m must divide into L batches)
  int64_t k = 1024;        ///< K, or TotalK for grouped_k (split into groups by the distribution)
  int64_t n = 2048;        ///< N, or TotalN for grouped_n (split into groups by the distribution)
  Distribution dist = Distribution::uniform;
  uint64_t seed = 1;
  DType dtype = DType::bf16;
  DType out_dtype = DType::bf16;
  Major b_major = Major::k;
  DeviceChoice device = DeviceChoice::automatic;
  std::string operator_name;      ///< force this operator; empty: the best one
  std::optional<std::string> target;  ///< `list` only: discover for this target ("90a", "cpu")
  std::optional<int> iters;       ///< timed iterations; unset: 20 on a GPU, 1 on the CPU
  std::optional<int> warmup;      ///< unset: 5 on a GPU, 0 on the CPU
  bool check = true;
  bool help = false;
};

/// Which options a subcommand accepts beyond the common ones.
enum class SpecOptions { run, list };

/// Parses `args` (the words after the subcommand). invalid_argument with the option and the rule on
/// a bad or unknown option; the CLI turns that into a usage error.
Result<ProblemSpec> parse_problem_spec(std::span<const std::string_view> args, SpecOptions which);

/// The option list, for --help.
std::string problem_spec_help(SpecOptions which);

}  // namespace gemmops::cli
