// tests/support/device_check.hpp: run an operator on a device copy of a host problem and compare its
// out with an expected result, for the gpu tier
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gtest/gtest.h>

#include "gemmops/device.hpp"
#include "support/compare.hpp"
#include "support/device_problem.hpp"
#include "support/reference.hpp"

namespace gemmops::testing {

/// out as `op` leaves it when run on a device copy of `host` (out poisoned there); `prepare` may
/// change the device arguments first (e.g. drop the data pointer of an operand without elements).
template <class Prepare>
Result<HostTensor> run_on_device(const Operator& op, const HostProblem& host, Prepare&& prepare) {
  GEMMOPS_ASSIGN_OR_RETURN(DeviceProblem dev, DeviceProblem::upload(host));
  prepare(dev.args);
  GEMMOPS_TRY(dev.run(op));
  GEMMOPS_TRY(synchronize());
  return dev.download_out(host.out);
}
inline Result<HostTensor> run_on_device(const Operator& op, const HostProblem& host) {
  return run_on_device(op, host, [](Arguments&) {});
}

/// Runs `op` on `host` and expects its out to match the float64 reference (tolerance for sums of
/// `tolerance_k` products), poison kept where the operation writes nothing.
inline void expect_matches_reference(const Operator& op, const HostProblem& host, int64_t tolerance_k) {
  auto out = run_on_device(op, host);
  ASSERT_TRUE(out) << out.status().to_string();
  const Comparison c = compare(*out, reference_result(host.arguments()), default_tolerance(host.spec.out, tolerance_k));
  EXPECT_TRUE(c.ok()) << c.describe();
}

}  // namespace gemmops::testing
