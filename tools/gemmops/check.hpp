// tools/gemmops/check.hpp: the CLI's correctness check against the CPU operator
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "gemmops/status.hpp"
#include "problem.hpp"

namespace gemmops::cli {

/// Tolerance on the relative Frobenius error for an output dtype (1e-2 for bf16/fp16).
double check_tolerance(DType out_dtype);

/// Runs the CPU operator on host copies of `problem`'s inputs (fp32 output when it supports that)
/// and compares `problem.out` with it: every element the operation writes must be written (no
/// poison left), rows of a grouped_m out and columns of a grouped_n out past offsets[G-1] must
/// keep their poison, and the relative
/// Frobenius error must be within check_tolerance(). Returns the error, or why the check failed.
Result<double> check_against_cpu(const Problem& problem);

}  // namespace gemmops::cli
