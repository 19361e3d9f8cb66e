// src/sm90/heuristics.hpp: a roofline estimate of a design's run time, which orders get_operators()
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "sm90/designs.hpp"
#include "sm90/kernel_problem.hpp"

namespace gemmops::sm90 {

/// Estimated microseconds for `p` on an H100/H200-class part. Pure: no device query, so discovery
/// orders the same way on every machine. Group sizes are unknown on the host (device offsets), so
/// grouped problems are modelled with rows spread evenly over the groups.
double estimate_time_us(const KernelProblem& p, const Sm90Design& d);

}  // namespace gemmops::sm90
