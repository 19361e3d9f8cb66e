// src/cpu/quantize.cpp: quantize_fp8, bf16/fp32 host matrices -> e4m3 + fp32 scales (amax / 448)
// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "arguments/rules.hpp"
#include "core/scale_geometry.hpp"
#include "cpu/convert.hpp"

namespace gemmops {
namespace {

Status check_host_data(const TensorDesc& t, const char* role) {
  if (t.device.is_cuda()) return invalid_argument(std::string(role) + ": must be on the cpu; got " + t.device.to_string());
  if (t.is_fake() && t.numel() > 0) return invalid_argument(std::string(role) + ": needs data; got a fake tensor");
  return Status::ok();
}

Status check_inputs(const TensorDesc& x, const TensorDesc& q, const OperandScales& s) {
  if (x.dtype != DType::bf16 && x.dtype != DType::fp32)
    return invalid_argument("x: dtype must be one of bf16, fp32; got " + std::string(name(x.dtype)));
  if (x.rank() != 2 && x.rank() != 3) return invalid_argument("x: must be of rank 2 or 3; got shape " + x.shape_string());
  GEMMOPS_TRY(detail::validate_layout(x, "x"));
  if (q.dtype != DType::e4m3) return invalid_argument("q: dtype must be e4m3; got " + std::string(name(q.dtype)));
  if (q.shape != x.shape)
    return invalid_argument("q: shape must equal x's " + x.shape_string() + "; got " + q.shape_string());
  GEMMOPS_TRY(detail::validate_layout(q, "q"));
  GEMMOPS_TRY(check_host_data(x, "x"));
  GEMMOPS_TRY(check_host_data(q, "q"));
  return check_host_data(s.scales, "scales");
}

float load(const TensorDesc& x, int64_t offset) {
  const auto* p = static_cast<const std::byte*>(x.data);
  if (x.dtype == DType::fp32) {
    float v;
    std::memcpy(&v, p + offset * 4, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, p + offset * 2, 2);
  return cpu::bf16_to_float(h);
}

// The rows and columns one scale covers.
void block_of(ScaleGranularity g, int64_t rows, int64_t cols, int64_t* br, int64_t* bc) {
  switch (g) {
    case ScaleGranularity::tensor: *br = std::max<int64_t>(rows, 1), *bc = std::max<int64_t>(cols, 1); return;
    case ScaleGranularity::row: *br = 1, *bc = std::max<int64_t>(cols, 1); return;
    case ScaleGranularity::block_1x128: *br = 1, *bc = detail::kScaleBlock; return;
    case ScaleGranularity::block_128x128: *br = detail::kScaleBlock, *bc = detail::kScaleBlock; return;
  }
}

}  // namespace

Status quantize_fp8(const TensorDesc& x, const TensorDesc& q, const OperandScales& s) {
  GEMMOPS_TRY(check_inputs(x, q, s));
  detail::OperandGeometry g;
  g.stacked = x.rank() == 3;
  g.instances = g.stacked ? x.size(0) : 1;
  g.mn = x.size(-2);
  g.k = x.size(-1);
  g.role = "x";
  g.dims = g.stacked ? "(L,R,C)" : "(R,C)";
  g.mn_name = "R";
  g.k_name = "C";
  g.lead_name = "L";
  GEMMOPS_TRY(detail::validate_scales_tensor(s, g, x, "scales"));
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
        std::memcpy(static_cast<std::byte*>(s.scales.data) + detail::scale_offset(s, g.stacked, i, r0, c0) * 4,
                    &scale_out, 4);
        for (int64_t rr = r0; rr < r1; ++rr) {
          for (int64_t cc = c0; cc < c1; ++cc) {
            const float v = load(x, xi + rr * x.strides[r - 2] + cc * x.strides[r - 1]);
            qb[qi + rr * q.strides[r - 2] + cc * q.strides[r - 1]] = static_cast<std::byte>(cpu::float_to_e4m3(v * inverse));
          }
        }
      }
    }
  }
  return Status::ok();
}

}  // namespace gemmops
