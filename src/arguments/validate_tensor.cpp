// src/arguments/validate_tensor.cpp: rules on one operand: rank, sizes, strides, byte span, dtype
// SPDX-License-Identifier: Apache-2.0
#include <cstring>
#include <string>

#include "arguments/rules.hpp"
#include "core/checked_math.hpp"

namespace gemmops::detail {

std::string tuple_string(const int64_t* v, std::size_t n) {
  std::string s = "(";
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(v[i]);
  }
  if (n == 1) s += ",";
  return s + ")";
}

std::string labelled(const char* role, const char* dims, const TensorDesc& t) {
  return std::string(role) + " " + dims + " = " + t.shape_string();
}

Status agree(const char* what, int64_t got, int64_t want, const char* role, const char* ref,
             const std::string& shapes) {
  if (got == want) return Status::ok();
  return invalid_argument(std::string(role) + ": " + what + " (" + std::to_string(got) + ") must equal " + ref +
                          "'s " + what + " (" + std::to_string(want) + "); " + shapes);
}

namespace {
std::string shape_of(const TensorDesc& t) { return tuple_string(t.shape.data(), t.shape.size()); }
std::string strides_of(const TensorDesc& t) { return tuple_string(t.strides.data(), t.strides.size()); }
std::string head(std::string_view role) { return std::string(role) + ": "; }
}  // namespace

Status validate_rank(const TensorDesc& t, std::string_view role) {
  if (t.rank() >= 1 && t.rank() <= 3) return Status::ok();
  return invalid_argument(head(role) + "rank must be 1 to 3; got rank " + std::to_string(t.rank()) +
                          " with shape " + shape_of(t));
}

Status validate_stride_count(const TensorDesc& t, std::string_view role) {
  if (t.strides.size() == t.shape.size()) return Status::ok();
  return invalid_argument(head(role) + "must have one stride per dimension (" + std::to_string(t.rank()) +
                          "); got strides " + strides_of(t) + " for shape " + shape_of(t));
}

Status validate_sizes_non_negative(const TensorDesc& t, std::string_view role) {
  for (int64_t s : t.shape) {
    if (s < 0) return invalid_argument(head(role) + "sizes must be non-negative; got shape " + shape_of(t));
  }
  return Status::ok();
}

Status validate_strides_non_negative(const TensorDesc& t, std::string_view role) {
  for (int64_t s : t.strides) {
    if (s < 0) {
      return invalid_argument(head(role) + "strides must be non-negative; got strides " + strides_of(t));
    }
  }
  return Status::ok();
}

Status validate_span_fits(const TensorDesc& t, std::string_view role) {
  if (checked_numel(t) && checked_span_bytes(t)) return Status::ok();
  return invalid_argument(head(role) + "byte span must fit in int64; got shape " + shape_of(t) + " strides " +
                          strides_of(t) + " of " + std::string(name(t.dtype)));
}

Status validate_input_dtype(const TensorDesc& t, std::string_view role) {
  if (t.dtype == DType::i32) {
    return invalid_argument(head(role) +
                            "int32 operands are not supported; dtype must be one of bf16, fp16, fp32, e4m3, "
                            "e5m2; got int32");
  }
  return Status::ok();  // every other DType is a valid input
}

Status validate_out_dtype(const TensorDesc& out) {
  if (out.dtype == DType::bf16 || out.dtype == DType::fp16 || out.dtype == DType::fp32) return Status::ok();
  if (out.dtype == DType::i32) {
    return invalid_argument("out: int32 outputs are not supported; dtype must be one of bf16, fp16, fp32; got int32");
  }
  return invalid_argument("out: dtype must be one of bf16, fp16, fp32; got " + std::string(name(out.dtype)));
}

Status validate_layout(const TensorDesc& t, std::string_view role) {
  GEMMOPS_TRY(validate_stride_count(t, role));
  GEMMOPS_TRY(validate_sizes_non_negative(t, role));
  GEMMOPS_TRY(validate_strides_non_negative(t, role));
  return validate_span_fits(t, role);
}

int32_t host_i32(const TensorDesc& t, int64_t i) {
  int32_t v = 0;
  std::memcpy(&v, static_cast<const unsigned char*>(t.data) + i * int64_t{4}, sizeof v);  // no alignment assumed
  return v;
}

Status validate_index_vector(const TensorDesc& idx, const TensorDesc& operand, std::string_view role,
                             std::string_view dims, int64_t want, std::string_view want_is) {
  if (idx.dtype != DType::i32 || idx.rank() != 1 || (want >= 0 && idx.shape[0] != want))
    return invalid_argument(std::string(role) + ": must be int32 with shape " + std::string(dims) +
                            (want >= 0 ? " = (" + std::to_string(want) + ",), " + std::string(want_is) : "") +
                            "; got " + std::string(name(idx.dtype)) + " with shape " + idx.shape_string());
  GEMMOPS_TRY(validate_layout(idx, role));
  // Kernels read idx[i] directly; a strided view would need a copy the caller can make.
  if (idx.shape[0] > 1 && idx.strides[0] != 1)
    return invalid_argument(std::string(role) + ": must be contiguous (stride 1); got strides (" +
                            std::to_string(idx.strides[0]) + ",)");
  return validate_same_device(operand, idx, role);
}

}  // namespace gemmops::detail
