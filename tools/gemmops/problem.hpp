// tools/gemmops/problem.hpp: a ProblemSpec turned into tensors: host data, and device copies on CUDA
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <vector>

#include "gemmops/arguments.hpp"
#include "gemmops/device.hpp"
#include "problem_spec.hpp"

namespace gemmops::cli {

/// Exclusive end offsets of `groups` groups whose sizes add up to `total`, drawn from `dist`.
std::vector<int32_t> make_offsets(Distribution dist, int64_t total, int64_t groups, uint64_t seed);

/// The arguments of `spec` on `device` with no data (fake tensors), for discovery and compile.
Arguments fake_arguments(const ProblemSpec& spec, Device device);

/// Everything one run needs. Move-only (it owns device memory); `args` points into it.
struct Problem {
  ProblemSpec spec;
  Device device;
  std::vector<int32_t> offsets;          ///< grouped operations only
  std::vector<unsigned char> a, b, out;  ///< host bytes; `out` is where the output is read back
  DeviceBuffer d_a, d_b, d_out, d_offsets;
  Arguments args;                        ///< on `device`

  /// The same inputs in host memory, writing to `out_data` (dtype `out_dtype`): the reference.
  Arguments host_arguments(void* out_data, DType out_dtype) const;
  /// FLOPs of the rows or K slices the offsets cover.
  double flops() const;
  /// Whether the operation writes element `element` of out (row-major): rows of a grouped_m out
  /// and columns of a grouped_n out at or past offsets[G-1] must stay untouched.
  bool written(int64_t element) const;
  /// How many elements of out the operation writes.
  int64_t covered() const;
  /// Sets every byte of the output to 0xFF (NaN in every float dtype).
  Status poison_out();
  /// Copies the device output into `out` (nothing to do on the CPU).
  Status fetch_out();
};

/// Builds the host data (values exact in the dtype, offsets from the distribution) and, for a CUDA
/// device, its copy on that device.
Result<Problem> make_problem(const ProblemSpec& spec, Device device);

}  // namespace gemmops::cli
