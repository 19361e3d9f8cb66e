// src/arguments/validate_common.cpp: rules every operation shares: dtypes, accumulator, device, aliasing
// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "arguments/rules.hpp"
#include "core/checked_math.hpp"

namespace gemmops::detail {

namespace {

std::string hex(uintptr_t p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(p));
  return buf;
}

struct ByteRange {
  uintptr_t begin = 0, end = 0;  // [begin, end); empty when begin == end
};

// Pointer ranges are compared as integers; nothing is dereferenced. An end past the address
// space saturates, which can only widen the range and so never hides an overlap.
ByteRange range_of(const TensorDesc& t) {
  auto span = checked_span_bytes(t);
  ByteRange r;
  r.begin = reinterpret_cast<uintptr_t>(t.data);
  uintptr_t bytes = span ? static_cast<uintptr_t>(*span) : UINTPTR_MAX;
  r.end = r.begin > UINTPTR_MAX - bytes ? UINTPTR_MAX : r.begin + bytes;
  return r;
}

std::string range_string(const ByteRange& r) { return "[" + hex(r.begin) + ", " + hex(r.end) + ")"; }

}  // namespace

Status validate_ab_dtypes(const TensorDesc& a, const TensorDesc& b) {
  if (a.dtype == b.dtype) return Status::ok();
  if (is_fp8(a.dtype) && is_fp8(b.dtype)) return Status::ok();  // e4m3 x e5m2 is a native wgmma mix
  return invalid_argument("B: dtype must equal A's dtype (" + std::string(name(a.dtype)) +
                          "), or both must be fp8 (e4m3, e5m2); got " + std::string(name(b.dtype)));
}

Status validate_accumulator(DType accumulator) {
  if (accumulator == DType::fp32) return Status::ok();
  return invalid_argument("accumulator: must be fp32; got " + std::string(name(accumulator)));
}

Status validate_same_device(const TensorDesc& a, const TensorDesc& t, std::string_view role) {
  if (t.device == a.device) return Status::ok();
  return invalid_argument(std::string(role) + ": must be on A's device (" + a.device.to_string() + "); got " +
                          t.device.to_string());
}

Status validate_no_overlap(const TensorDesc& out, const TensorDesc& t, std::string_view role) {
  if (out.data == nullptr || t.data == nullptr) return Status::ok();
  ByteRange o = range_of(out), r = range_of(t);
  if (o.begin == o.end || r.begin == r.end) return Status::ok();
  if (o.begin < r.end && r.begin < o.end) {
    return invalid_argument("out: must not overlap " + std::string(role) + " in memory; out spans " +
                            range_string(o) + ", " + std::string(role) + " spans " + range_string(r));
  }
  return Status::ok();
}

Status validate_out_elements_distinct(const TensorDesc& out) {
  if (out.numel() == 0) return Status::ok();  // no elements, none to share an address
  // Dims of size 1 never step, so their strides do not matter.
  struct Dim {
    int64_t size, stride;
    int index;
  };
  std::vector<Dim> dims;
  for (int i = 0; i < out.rank(); ++i) {
    if (out.shape[i] > 1) dims.push_back({out.shape[i], out.strides[i], i});
  }
  for (const Dim& d : dims) {
    if (d.stride == 0) {
      return invalid_argument("out: elements must not overlap; got stride 0 on dimension " +
                              std::to_string(d.index) + " of size " + std::to_string(d.size) + ", strides " +
                              tuple_string(out.strides.data(), out.strides.size()));
    }
  }
  // Sufficient condition for distinct addresses: sorted by stride, each stride steps past the
  // whole extent of the smaller ones (true of every row-major, column-major or padded layout).
  std::stable_sort(dims.begin(), dims.end(), [](const Dim& x, const Dim& y) { return x.stride < y.stride; });
  int64_t extent = 1;  // elements covered by the dims seen so far
  for (const Dim& d : dims) {
    if (d.stride < extent) {
      return invalid_argument("out: elements must not overlap (each stride must step past the extent of the "
                              "smaller ones); got shape " + tuple_string(out.shape.data(), out.shape.size()) +
                              " strides " + tuple_string(out.strides.data(), out.strides.size()));
    }
    int64_t step = 0;
    // Spans were checked to fit in int64 before, so this cannot overflow; guard anyway.
    if (!checked_mul(d.size - 1, d.stride, &step) || !checked_add(step, extent, &extent)) break;
  }
  return Status::ok();
}

Status validate_operands(const TensorDesc& a, const TensorDesc& b, const TensorDesc& out, DType accumulator) {
  GEMMOPS_TRY(validate_input_dtype(a, "A"));
  GEMMOPS_TRY(validate_input_dtype(b, "B"));
  GEMMOPS_TRY(validate_ab_dtypes(a, b));
  GEMMOPS_TRY(validate_out_dtype(out));
  GEMMOPS_TRY(validate_accumulator(accumulator));
  GEMMOPS_TRY(validate_same_device(a, b, "B"));
  GEMMOPS_TRY(validate_same_device(a, out, "out"));
  return validate_out_elements_distinct(out);
}

}  // namespace gemmops::detail
