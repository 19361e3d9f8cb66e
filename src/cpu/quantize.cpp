// src/cpu/quantize.cpp: quantize_fp8's host loop, bf16/fp32 host matrices -> e4m3 + fp32 scales
// (amax / 448)
// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "cpu/convert.hpp"
#include "cpu/quantize.hpp"

namespace gemmops::cpu {
namespace {

using gemmops::detail::kScaleBlock;

float load(const TensorDesc& x, int64_t offset) {
  const auto* p = static_cast<const std::byte*>(x.data);
  if (x.dtype == DType::fp32) {
    float v;
    std::memcpy(&v, p + offset * 4, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, p + offset * 2, 2);
  return bf16_to_float(h);
}

// The rows and columns one scale covers.
void block_of(ScaleGranularity g, int64_t rows, int64_t cols, int64_t* br, int64_t* bc) {
  switch (g) {
    case ScaleGranularity::tensor: *br = std::max<int64_t>(rows, 1), *bc = std::max<int64_t>(cols, 1); return;
    case ScaleGranularity::row: *br = 1, *bc = std::max<int64_t>(cols, 1); return;
    case ScaleGranularity::block_1x128: *br = 1, *bc = kScaleBlock; return;
    case ScaleGranularity::block_128x128: *br = kScaleBlock, *bc = kScaleBlock; return;
  }
}

}  // namespace

Status quantize_on_host(const TensorDesc& x, const TensorDesc& q, const OperandScales& s,
                        const gemmops::detail::OperandGeometry& g) {
  const int r = x.rank();
  int64_t br = 1, bc = 1;
  block_of(s.granularity, g.mn, g.k, &br, &bc);
  auto* qb = static_cast<std::byte*>(q.data);
  // Tensor scales exist with no rows or columns, row scales with no columns: they get the scale of
  // an empty block (kQuantizeMinAmax / 448), so that no scale is left unwritten.
  const bool whole_rows = s.granularity == ScaleGranularity::tensor || s.granularity == ScaleGranularity::row;
  const int64_t r_end = std::max<int64_t>(g.mn, s.granularity == ScaleGranularity::tensor ? 1 : 0);
  const int64_t c_end = std::max<int64_t>(g.k, whole_rows ? 1 : 0);
  for (int64_t i = 0; i < g.instances; ++i) {
    const int64_t xi = g.stacked ? i * x.strides[0] : 0, qi = g.stacked ? i * q.strides[0] : 0;
    for (int64_t r0 = 0; r0 < r_end; r0 += br) {
      for (int64_t c0 = 0; c0 < c_end; c0 += bc) {
        const int64_t r1 = std::min(g.mn, r0 + br), c1 = std::min(g.k, c0 + bc);
        float amax = 0.0f;
        for (int64_t rr = r0; rr < r1; ++rr) {
          for (int64_t cc = c0; cc < c1; ++cc) {
            const float v = load(x, xi + rr * x.strides[r - 2] + cc * x.strides[r - 1]);
            if (!std::isfinite(v)) {
              return invalid_argument("x: must be finite; got " + std::to_string(v) + " at row " +
                                      std::to_string(rr) + ", column " + std::to_string(cc) +
                                      (g.stacked ? " of instance " + std::to_string(i) : std::string()));
            }
            amax = std::max(amax, std::fabs(v));
          }
        }
        amax = std::max(amax, kQuantizeMinAmax);
        const float scale = amax / kE4m3Max, inverse = kE4m3Max / amax;
        float scale_out = scale;
        std::memcpy(static_cast<std::byte*>(s.scales.data) + gemmops::detail::scale_offset(s, g.stacked, i, r0, c0) * 4,
                    &scale_out, 4);
        for (int64_t rr = r0; rr < r1; ++rr) {
          for (int64_t cc = c0; cc < c1; ++cc) {
            const float v = load(x, xi + rr * x.strides[r - 2] + cc * x.strides[r - 1]);
            qb[qi + rr * q.strides[r - 2] + cc * q.strides[r - 1]] = static_cast<std::byte>(float_to_e4m3(v * inverse));
          }
        }
      }
    }
  }
  return Status::ok();
}

}  // namespace gemmops::cpu
