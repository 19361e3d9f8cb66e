// src/fp8/validate_quantize.cpp: the rules of quantize_fp8's tensors, each failure naming the tensor
// and the rule
// SPDX-License-Identifier: Apache-2.0
#include <cstdint>
#include <string>

#include "arguments/rules.hpp"
#include "fp8/quantize_rules.hpp"

namespace gemmops::fp8 {
namespace {

Status need_x_dtype(const TensorDesc& x) {
  if (x.dtype == DType::bf16 || x.dtype == DType::fp32) return Status::ok();
  return invalid_argument("x: dtype must be one of bf16, fp32; got " + std::string(name(x.dtype)));
}

Status need_x_rank(const TensorDesc& x) {
  if (x.rank() == 2 || x.rank() == 3) return Status::ok();
  return invalid_argument("x: must be of rank 2 or 3; got shape " + x.shape_string());
}

Status need_q_like_x(const TensorDesc& q, const TensorDesc& x) {
  if (q.dtype != DType::e4m3) return invalid_argument("q: dtype must be e4m3; got " + std::string(name(q.dtype)));
  if (q.shape != x.shape)
    return invalid_argument("q: shape must equal x's " + x.shape_string() + "; got " + q.shape_string());
  return Status::ok();
}

// One device for the three: the host loop reads host memory, the kernel device memory.
Status need_x_device(const TensorDesc& t, const TensorDesc& x, const char* role) {
  if (t.device == x.device) return Status::ok();
  return invalid_argument(std::string(role) + ": must be on x's device (" + x.device.to_string() + "); got " +
                          t.device.to_string());
}

Status need_data(const TensorDesc& t, const char* role) {
  if (!t.is_fake() || t.numel() == 0) return Status::ok();
  return invalid_argument(std::string(role) + ": run needs data; got a fake tensor (no data pointer)");
}

// The kernel reads x and writes the scales as whole elements; torch and DeviceBuffer align them.
Status need_aligned(const TensorDesc& t, const char* role) {
  const auto bytes = static_cast<uintptr_t>(size_of(t.dtype));
  if (t.numel() == 0 || reinterpret_cast<uintptr_t>(t.data) % bytes == 0) return Status::ok();
  return invalid_argument(std::string(role) + ": on a CUDA device its data must be aligned to its element size (" +
                          std::to_string(bytes) + " bytes); got " + t.describe());
}

}  // namespace

detail::OperandGeometry quantize_geometry(const TensorDesc& x) {
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
  return g;
}

Status validate_quantize(const TensorDesc& x, const TensorDesc& q, const OperandScales& s) {
  GEMMOPS_TRY(need_x_dtype(x));
  GEMMOPS_TRY(need_x_rank(x));
  GEMMOPS_TRY(detail::validate_layout(x, "x"));
  GEMMOPS_TRY(need_q_like_x(q, x));
  GEMMOPS_TRY(detail::validate_layout(q, "q"));
  GEMMOPS_TRY(need_x_device(q, x, "q"));
  GEMMOPS_TRY(need_x_device(s.scales, x, "scales"));
  return detail::validate_scales_tensor(s, quantize_geometry(x), x, "scales");
}

Status validate_quantize_data(const TensorDesc& x, const TensorDesc& q, const OperandScales& s) {
  GEMMOPS_TRY(need_data(x, "x"));
  GEMMOPS_TRY(need_data(q, "q"));
  GEMMOPS_TRY(need_data(s.scales, "scales"));
  if (!x.device.is_cuda()) return Status::ok();
  GEMMOPS_TRY(need_aligned(x, "x"));
  return need_aligned(s.scales, "scales");
}

}  // namespace gemmops::fp8
