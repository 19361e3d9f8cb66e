// src/moe/validate_gather_reduce.cpp: the rules of GatherReduceArguments, each failure naming the
// operand and the rule
// SPDX-License-Identifier: Apache-2.0
#include <string>

#include "arguments/rules.hpp"
#include "gemmops/moe.hpp"

namespace gemmops {
namespace {

std::string shapes_of(const GatherReduceArguments& a) {
  std::string s = "rows (S, H) = " + a.rows.shape_string() + ", pair_rows (T, k) = " + a.pair_rows.shape_string();
  if (a.scores) s += ", scores (T, k) = " + a.scores->shape_string();
  return s + ", out (T, H) = " + a.out.shape_string();
}

Status need_rank(const TensorDesc& t, int rank, const char* role, const char* dims) {
  if (t.rank() == rank) return Status::ok();
  return invalid_argument(std::string(role) + ": must be " + dims + " (rank " + std::to_string(rank) + "); got " +
                          t.describe());
}

Status need_dtype(const TensorDesc& t, bool ok, const char* role, const char* rule) {
  if (ok) return Status::ok();
  return invalid_argument(std::string(role) + ": must be " + rule + "; got " + t.describe());
}

Status need_columns_contiguous(const TensorDesc& t, const char* role) {
  if (t.size(-1) <= 1 || t.stride(-1) == 1) return Status::ok();
  return invalid_argument(std::string(role) + ": its columns must be contiguous (last stride 1); got " + t.describe());
}

Status need_contiguous(const TensorDesc& t, const char* role) {
  int64_t expect = 1;
  for (int d = t.rank() - 1; d >= 0; --d) {
    if (t.size(d) > 1 && t.stride(d) != expect) {
      return invalid_argument(std::string(role) + ": must be contiguous (row-major); got " + t.describe());
    }
    expect *= t.size(d);
  }
  return Status::ok();
}

Status need_device(const TensorDesc& t, const TensorDesc& rows, const char* role) {
  if (t.device == rows.device) return Status::ok();
  return invalid_argument(std::string(role) + ": must be on rows' device (" + rows.device.to_string() + "); got " +
                          t.describe());
}

bool is_float(DType t) { return t == DType::bf16 || t == DType::fp16 || t == DType::fp32; }

}  // namespace

Status validate(const GatherReduceArguments& a) {
  using detail::validate_layout;
  GEMMOPS_TRY(validate_layout(a.rows, "rows"));
  GEMMOPS_TRY(validate_layout(a.pair_rows, "pair_rows"));
  GEMMOPS_TRY(validate_layout(a.out, "out"));
  GEMMOPS_TRY(need_rank(a.rows, 2, "rows", "(S, H)"));
  GEMMOPS_TRY(need_rank(a.pair_rows, 2, "pair_rows", "(T, k)"));
  GEMMOPS_TRY(need_rank(a.out, 2, "out", "(T, H)"));
  GEMMOPS_TRY(need_dtype(a.rows, is_float(a.rows.dtype), "rows", "bf16, fp16 or fp32"));
  GEMMOPS_TRY(need_dtype(a.out, is_float(a.out.dtype), "out", "bf16, fp16 or fp32"));
  GEMMOPS_TRY(need_dtype(a.pair_rows, a.pair_rows.dtype == DType::i32, "pair_rows", "int32"));
  GEMMOPS_TRY(need_columns_contiguous(a.rows, "rows"));
  GEMMOPS_TRY(need_columns_contiguous(a.out, "out"));
  GEMMOPS_TRY(need_contiguous(a.pair_rows, "pair_rows"));
  GEMMOPS_TRY(need_device(a.pair_rows, a.rows, "pair_rows"));
  GEMMOPS_TRY(need_device(a.out, a.rows, "out"));
  const std::string shapes = shapes_of(a);
  GEMMOPS_TRY(detail::agree("H", a.out.size(1), a.rows.size(1), "out", "rows", shapes));
  GEMMOPS_TRY(detail::agree("T", a.out.size(0), a.pair_rows.size(0), "out", "pair_rows", shapes));
  if (a.out.size(0) > 1 && a.out.size(1) > 0 && a.out.stride(0) < a.out.size(1)) {
    return invalid_argument("out: its rows must not overlap (row stride >= H); got " + a.out.describe());
  }
  if (a.rows.size(0) > INT32_MAX || a.pair_rows.size(0) > INT32_MAX || a.rows.size(1) > INT32_MAX) {
    return invalid_argument("rows, pair_rows: S, T and H must each be below 2^31; " + shapes);
  }
  if (a.scores) {
    const TensorDesc& s = *a.scores;
    GEMMOPS_TRY(validate_layout(s, "scores"));
    GEMMOPS_TRY(need_rank(s, 2, "scores", "(T, k)"));
    GEMMOPS_TRY(need_dtype(s, s.dtype == DType::fp32, "scores", "fp32"));
    GEMMOPS_TRY(need_contiguous(s, "scores"));
    GEMMOPS_TRY(need_device(s, a.rows, "scores"));
    if (s.shape != a.pair_rows.shape) {
      return invalid_argument("scores: must have pair_rows' shape (T, k); " + shapes);
    }
    GEMMOPS_TRY(detail::validate_no_overlap(a.out, s, "scores"));
  }
  if (a.row_limit) {
    const TensorDesc& l = *a.row_limit;
    GEMMOPS_TRY(validate_layout(l, "row_limit"));
    GEMMOPS_TRY(need_dtype(l, l.dtype == DType::i32, "row_limit", "int32"));
    GEMMOPS_TRY(need_device(l, a.rows, "row_limit"));
    if (l.numel() != 1) return invalid_argument("row_limit: must hold one element; got " + l.describe());
    GEMMOPS_TRY(detail::validate_no_overlap(a.out, l, "row_limit"));
  }
  GEMMOPS_TRY(detail::validate_no_overlap(a.out, a.rows, "rows"));
  GEMMOPS_TRY(detail::validate_no_overlap(a.out, a.pair_rows, "pair_rows"));
  return Status::ok();
}

}  // namespace gemmops
