// tests/support/compare.hpp: an operator's out against a Reference: errors, mismatches, poison
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "support/host_tensor.hpp"
#include "support/reference.hpp"

namespace gemmops::testing {

/// An element matches when |out - ref| <= atol + rtol * |ref|.
struct Tolerance {
  double atol = 0, rtol = 0;
};

/// Room for fp32 accumulation of k products of magnitude <= 1 (any order) plus the rounding of out.
inline Tolerance default_tolerance(DType out, int64_t k) {
  const double rtol = out == DType::bf16 ? 0x1p-8 : out == DType::fp16 ? 0x1p-10 : 0x1p-20;
  return {0x1p-20 * double(k + 1), rtol};
}

/// A fused epilogue's: the product's accumulation plus the fast exponential and division of the
/// activations (a few ulp of fp32), which relu_squared and the gates scale by up to ~2|x|; then out's
/// rounding. Far below what a wrong column, row, group or pairing costs (O(1) of a product).
inline Tolerance epilogue_tolerance(DType out, int64_t k) {
  const Tolerance t = default_tolerance(out, k);
  return {16 * t.atol + 0x1p-12, out == DType::fp32 ? 0x1p-14 : 2 * t.rtol};
}

struct Comparison {
  double max_abs_error = 0;
  double rel_frobenius = 0;       ///< ||out - ref|| / ||ref|| over written elements (abs when ref is 0)
  int64_t mismatches = 0;
  int64_t first_mismatch = -1;    ///< logical index of the first element out of tolerance
  int64_t first_unwritten = -1;   ///< a written element still holding the poison bytes
  int64_t first_clobbered = -1;   ///< byte offset of a changed poison byte outside the written elements
  double out_at_first = 0, ref_at_first = 0;

  bool ok() const { return mismatches == 0 && first_unwritten < 0 && first_clobbered < 0; }
  std::string describe() const {
    std::ostringstream s;
    s << "max_abs_error " << max_abs_error << ", rel_frobenius " << rel_frobenius << ", mismatches "
      << mismatches;
    if (first_mismatch >= 0)
      s << ", first at " << first_mismatch << " (out " << out_at_first << ", ref " << ref_at_first << ")";
    if (first_unwritten >= 0) s << ", element " << first_unwritten << " never written";
    if (first_clobbered >= 0) s << ", byte " << first_clobbered << " outside the written elements changed";
    return s.str();
  }
};

/// Compares `out` (poisoned with HostTensor::poison() before the run) with `ref`. Elements that
/// the reference marks unwritten, and every storage byte no element covers, must keep the poison.
inline Comparison compare(const HostTensor& out, const Reference& ref, Tolerance tol) {
  Comparison c;
  const auto size = static_cast<int64_t>(size_of(out.desc.dtype));
  std::vector<char> covered(out.storage.size(), 0);
  double diff2 = 0, ref2 = 0;
  for (int64_t e = 0, n = out.numel(); e < n; ++e) {
    const std::byte* p = out.at(e);
    const int64_t byte0 = p - out.storage.data();
    const bool written = ref.written[static_cast<size_t>(e)] != 0;
    bool poisoned = true;
    for (int64_t b = 0; b < size; ++b) poisoned = poisoned && p[b] == std::byte{0xff};
    if (!written) {
      if (!poisoned && c.first_clobbered < 0) c.first_clobbered = byte0;
      continue;
    }
    for (int64_t b = 0; b < size; ++b) covered[static_cast<size_t>(byte0 + b)] = 1;
    if (poisoned && c.first_unwritten < 0) c.first_unwritten = e;
    const double o = load_element(out.desc.dtype, p), r = ref.values[static_cast<size_t>(e)];
    const double err = std::fabs(o - r);
    const bool bad = std::isnan(o) != std::isnan(r) || (!std::isnan(r) && !(err <= tol.atol + tol.rtol * std::fabs(r)));
    if (!std::isnan(err)) {
      c.max_abs_error = std::max(c.max_abs_error, err);
      diff2 += err * err;
      ref2 += r * r;
    }
    if (bad) {
      if (c.first_mismatch < 0) c.first_mismatch = e, c.out_at_first = o, c.ref_at_first = r;
      ++c.mismatches;
    }
  }
  c.rel_frobenius = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  for (size_t b = 0; b < out.storage.size() && c.first_clobbered < 0; ++b) {
    if (!covered[b] && out.storage[b] != std::byte{0xff}) {
      // Bytes of unwritten elements were checked above; any other uncovered byte is a gap.
      c.first_clobbered = static_cast<int64_t>(b);
    }
  }
  return c;
}

}  // namespace gemmops::testing
