// src/core/scale_geometry.hpp: where an operand's fp32 scale for an element lives (shared by validation,
// the CPU operators and the quantiser, so that the three read one definition)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gemmops/arguments.hpp"

namespace gemmops::detail {

inline constexpr int64_t kScaleBlock = 128;
/// ceil(n / 128) for n >= 0, without the overflow of n + 127 near INT64_MAX (an operand with no
/// elements may have any extent).
inline int64_t ceil_blocks(int64_t n) { return n / kScaleBlock + (n % kScaleBlock != 0 ? 1 : 0); }

/// An operand seen as `instances` matrices of mn x k: A's rows and B's columns are its MN.
struct OperandGeometry {
  /// Stacked operands (batched, M-grouped B, N-grouped A) have a leading instance dimension.
  bool stacked = false;
  int64_t instances = 1;
  int64_t mn = 0, k = 0;
  /// K-grouped: K is split into `groups` ranges; tensor and row scales are per group.
  bool k_grouped = false;
  int64_t groups = 0;
  const char* role = "A";        ///< "A" or "B"
  const char* dims = "(M,K)";    ///< the operand's dimension names, for messages
  const char* mn_name = "M";     ///< "M", "TotalM", "N", "TotalN"
  const char* k_name = "K";      ///< "K" or "TotalK"
  const char* lead_name = "";    ///< "L" or "G" when the scales have a leading dimension
};

/// The geometry of A or B of arguments whose structure (ranks, shapes) is valid.
OperandGeometry geometry_of(const Arguments& args, bool is_a);

/// Whether `granularity` scales of `g` have a leading (instance or group) dimension.
bool has_lead(const OperandGeometry& g, ScaleGranularity granularity);
/// The expected shape of the scales, and its symbolic form ("(TotalM, ceil(K/128))").
std::vector<int64_t> expected_scale_shape(const OperandGeometry& g, ScaleGranularity granularity);
std::string expected_scale_dims(const OperandGeometry& g, ScaleGranularity granularity);

/// The element offset (in fp32 elements from scales.data) of the scale of element (mn, k) of
/// instance `instance` (or of group `instance` for K-grouped tensor and row scales).
inline int64_t scale_offset(const OperandScales& s, bool lead, int64_t instance, int64_t mn, int64_t k) {
  const TensorDesc& t = s.scales;
  const int64_t base = lead ? instance * t.strides[0] : 0;
  switch (s.granularity) {
    case ScaleGranularity::tensor: return base;
    case ScaleGranularity::row: return base + mn * t.strides[lead ? 1 : 0];
    case ScaleGranularity::block_1x128: return base + mn * t.strides[t.rank() - 2] + (k / kScaleBlock) * t.strides[t.rank() - 1];
    case ScaleGranularity::block_128x128:
      return base + (mn / kScaleBlock) * t.strides[t.rank() - 2] + (k / kScaleBlock) * t.strides[t.rank() - 1];
  }
  return base;
}

/// a_scales / b_scales of either argument type.
const std::optional<OperandScales>& scales_of(const Arguments& args, bool is_a);

}  // namespace gemmops::detail
