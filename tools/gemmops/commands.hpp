// tools/gemmops/commands.hpp: the subcommands and what they share (exit codes, errors, device choice)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gemmops/status.hpp"
#include "gemmops/tensor.hpp"
#include "problem_spec.hpp"

namespace gemmops::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  ///< the library or the check said no
inline constexpr int kExitUsage = 2;    ///< the command line is wrong

using Words = std::span<const std::string_view>;

/// The whole command line after the program name: the subcommand, then its options. Returns the
/// exit code (kExitOk, kExitFailure, kExitUsage).
int dispatch(Words words);

int run_command(Words args);
int list_command(Words args);

/// Parses the options of `command`; on --help prints its help and sets `*exit_code` to kExitOk, on a
/// usage error prints it and sets kExitUsage. Returns whether the command should go on.
bool parse_or_exit(std::string_view command, Words args, SpecOptions which, std::string_view summary,
                   ProblemSpec* spec, int* exit_code);

/// Prints "gemmops <command>: <message>" to stderr and returns kExitFailure.
int fail(std::string_view command, const Status& status);

/// Whether the CUDA driver reports at least one device (false without a driver).
bool have_cuda_device();

/// The devices to try, best first: --device cpu/cuda give one; auto gives cuda:0 (with a GPU), then cpu.
std::vector<Device> candidate_devices(const ProblemSpec& spec);

/// "grouped_gemm_m TotalM=8192 G=12 K=1024 N=2048 bf16->bf16 (fp32 acc) B k-major, uniform groups".
std::string describe(const ProblemSpec& spec);

}  // namespace gemmops::cli
