// src/arguments/validate_grouped.cpp: M-, K- and N-grouped GEMM rules, and the offsets operand
// SPDX-License-Identifier: Apache-2.0
#include <string>

#include "arguments/rules.hpp"

namespace gemmops::detail {

namespace {

std::string ranks_of(const GroupedGemmArguments& a) {
  return std::to_string(a.A.rank()) + "/" + std::to_string(a.B.rank()) + "/" + std::to_string(a.out.rank());
}

// A (TotalM,K) x B (G,K,N) -> out (TotalM,N).
Status validate_grouped_m_shapes(const GroupedGemmArguments& g) {
  const TensorDesc &A = g.A, &B = g.B, &out = g.out;
  const std::string ab = labelled("A", "(TotalM,K)", A) + ", " + labelled("B", "(G,K,N)", B);
  const std::string ao = labelled("A", "(TotalM,K)", A) + ", " + labelled("out", "(TotalM,N)", out);
  const char* out_dims = is_gated(g.epilogue.activation) ? "(TotalM,N/2)" : "(TotalM,N)";
  const std::string bo = labelled("B", "(G,K,N)", B) + ", " + labelled("out", out_dims, out);
  GEMMOPS_TRY(agree("K", B.size(1), A.size(1), "B", "A", ab));
  // A gathered through a_row_index may have any number of rows: TotalM is out's (and the index's).
  if (!g.a_row_index) GEMMOPS_TRY(agree("TotalM", out.size(0), A.size(0), "out", "A", ao));
  return validate_out_columns(g.epilogue, out.size(1), B.size(2), bo);
}

// A (M,TotalK) x B (TotalK,N) -> out (G,M,N).
Status validate_grouped_k_shapes(const GroupedGemmArguments& g) {
  const TensorDesc &A = g.A, &B = g.B, &out = g.out;
  const std::string ab = labelled("A", "(M,TotalK)", A) + ", " + labelled("B", "(TotalK,N)", B);
  const std::string ao = labelled("A", "(M,TotalK)", A) + ", " + labelled("out", "(G,M,N)", out);
  const std::string bo = labelled("B", "(TotalK,N)", B) + ", " + labelled("out", "(G,M,N)", out);
  // A gathered along K may have any number of columns, a gathered B any number of rows: TotalK is
  // then the index's length (validate_k_index.cpp checks it against the other operand's).
  if (!g.a_k_index && !g.b_k_index) GEMMOPS_TRY(agree("TotalK", B.size(0), A.size(1), "B", "A", ab));
  GEMMOPS_TRY(agree("M", out.size(1), A.size(0), "out", "A", ao));
  return agree("N", out.size(2), B.size(1), "out", "B", bo);
}

// A (G,MaxM,K) x B (G,K,N) -> out (G,MaxM,N).
Status validate_grouped_m_masked_shapes(const GroupedGemmArguments& g) {
  const TensorDesc &A = g.A, &B = g.B, &out = g.out;
  const std::string ab = labelled("A", "(G,MaxM,K)", A) + ", " + labelled("B", "(G,K,N)", B);
  const std::string ao = labelled("A", "(G,MaxM,K)", A) + ", " + labelled("out", "(G,MaxM,N)", out);
  const char* out_dims = is_gated(g.epilogue.activation) ? "(G,MaxM,N/2)" : "(G,MaxM,N)";
  const std::string bo = labelled("B", "(G,K,N)", B) + ", " + labelled("out", out_dims, out);
  GEMMOPS_TRY(agree("G", B.size(0), A.size(0), "B", "A", ab));
  GEMMOPS_TRY(agree("K", B.size(1), A.size(2), "B", "A", ab));
  GEMMOPS_TRY(agree("G", out.size(0), A.size(0), "out", "A", ao));
  GEMMOPS_TRY(agree("MaxM", out.size(1), A.size(1), "out", "A", ao));
  return validate_out_columns(g.epilogue, out.size(2), B.size(2), bo);
}

// A (G,M,K) x B (K,TotalN) -> out (M,TotalN).
Status validate_grouped_n_shapes(const GroupedGemmArguments& g) {
  const TensorDesc &A = g.A, &B = g.B, &out = g.out;
  const std::string ab = labelled("A", "(G,M,K)", A) + ", " + labelled("B", "(K,TotalN)", B);
  const std::string ao = labelled("A", "(G,M,K)", A) + ", " + labelled("out", "(M,TotalN)", out);
  const std::string bo = labelled("B", "(K,TotalN)", B) + ", " + labelled("out", "(M,TotalN)", out);
  GEMMOPS_TRY(agree("K", B.size(0), A.size(2), "B", "A", ab));
  GEMMOPS_TRY(agree("M", out.size(0), A.size(1), "out", "A", ao));
  return agree("TotalN", out.size(1), B.size(1), "out", "B", bo);
}

Status validate_offsets_form(const TensorDesc& off, int64_t groups) {
  if (off.dtype == DType::i32 && off.rank() == 1 && off.shape[0] == groups) return Status::ok();
  return invalid_argument("offsets: must be int32 with shape (G,) = (" + std::to_string(groups) + ",); got " +
                          std::string(name(off.dtype)) + " with shape " + off.shape_string());
}

Status validate_offsets_contiguous(const TensorDesc& off) {
  // Kernels read offsets[i] directly; a strided view would need a copy the caller can make.
  if (off.shape[0] <= 1 || off.strides[0] == 1) return Status::ok();
  return invalid_argument("offsets: must be contiguous (stride 1); got strides (" +
                          std::to_string(off.strides[0]) + ",)");
}

// Values are only visible on the host; device offsets are the kernel's to trust.
Status validate_offsets_values(const TensorDesc& off, int64_t total, std::string_view total_name) {
  if (off.device.is_cuda() || off.data == nullptr) return Status::ok();
  int32_t prev = 0;
  for (int64_t i = 0; i < off.shape[0]; ++i) {
    const int32_t v = host_i32(off, i);
    const std::string at = "offsets[" + std::to_string(i) + "] = " + std::to_string(v);
    if (v < 0) return invalid_argument("offsets: must be non-negative; got " + at);
    if (v < prev) {
      return invalid_argument("offsets: must be nondecreasing; got " + at + " after offsets[" +
                              std::to_string(i - 1) + "] = " + std::to_string(prev));
    }
    prev = v;
  }
  if (off.shape[0] > 0 && prev > total) {
    return invalid_argument("offsets: last offset must be at most " + std::string(total_name) + " (" +
                            std::to_string(total) + "); got offsets[" + std::to_string(off.shape[0] - 1) +
                            "] = " + std::to_string(prev));
  }
  return Status::ok();
}

// Masked counts: each in [0, MaxM] (host values only, as above).
Status validate_counts_values(const TensorDesc& off, int64_t max_m) {
  if (off.device.is_cuda() || off.data == nullptr) return Status::ok();
  for (int64_t i = 0; i < off.shape[0]; ++i) {
    const int32_t v = host_i32(off, i);
    if (v < 0 || v > max_m) {
      return invalid_argument("offsets: the masked form's row counts must be in [0, MaxM] = [0, " +
                              std::to_string(max_m) + "]; got offsets[" + std::to_string(i) + "] = " +
                              std::to_string(v));
    }
  }
  return Status::ok();
}

// Aligned groups: a group ends at or after its aligned start, or where the previous one ended (an
// empty group written without its padding); host values only.
Status validate_aligned_ends(const TensorDesc& off, int64_t alignment) {
  if (alignment == 1 || off.device.is_cuda() || off.data == nullptr) return Status::ok();
  int64_t prev = 0;
  for (int64_t i = 0; i < off.shape[0]; ++i) {
    const int32_t v = host_i32(off, i);
    const int64_t start = (prev + alignment - 1) / alignment * alignment;
    if (v < start && v != prev) {
      return invalid_argument("offsets: with group_alignment " + std::to_string(alignment) +
                              " a group must end at or after its aligned start (or where the previous group ended: "
                              "empty); got offsets[" + std::to_string(i) +
                              "] = " + std::to_string(v) + " before the start " + std::to_string(start) +
                              " (offsets[" + std::to_string(i - 1) + "] = " + std::to_string(prev) + " rounded up)");
    }
    prev = v;
  }
  return Status::ok();
}

Status validate_group_alignment(const GroupedGemmArguments& g, OperationKind kind) {
  const int64_t a = g.group_alignment;
  if (a == 1) return Status::ok();
  if (kind != OperationKind::grouped_m)
    return invalid_argument("group_alignment: only the M-grouped form (2/3/2) has aligned groups; got " +
                            std::to_string(a) + " for " + std::string(name(kind)));
  if (a < 1 || (a & (a - 1)) != 0)
    return invalid_argument("group_alignment: must be a power of two (1: contiguous groups); got " + std::to_string(a));
  return Status::ok();
}

}  // namespace

Status validate_offsets(const GroupedGemmArguments& g, int64_t groups, int64_t total, std::string_view total_name) {
  const TensorDesc& off = g.offsets;
  GEMMOPS_TRY(validate_offsets_form(off, groups));
  GEMMOPS_TRY(validate_layout(off, "offsets"));
  GEMMOPS_TRY(validate_offsets_contiguous(off));
  GEMMOPS_TRY(validate_same_device(g.A, off, "offsets"));
  return validate_offsets_values(off, total, total_name);
}

Result<OperationKind> grouped_kind(const GroupedGemmArguments& g) {
  int a = g.A.rank(), b = g.B.rank(), o = g.out.rank();
  if (a == 2 && b == 3 && o == 2) return OperationKind::grouped_m;
  if (a == 2 && b == 2 && o == 3) return OperationKind::grouped_k;
  if (a == 3 && b == 2 && o == 2) return OperationKind::grouped_n;
  if (a == 3 && b == 3 && o == 3) return OperationKind::grouped_m_masked;
  return invalid_argument(
      "A, B, out: ranks must be 2/3/2 (grouped_gemm_m), 2/2/3 (grouped_gemm_k), 3/2/2 (grouped_gemm_n) or 3/3/3 "
      "(grouped_gemm_m_masked); got " + ranks_of(g));
}

Status validate_grouped(const GroupedGemmArguments& g) {
  for (auto [t, role] : {std::pair{&g.A, "A"}, std::pair{&g.B, "B"}, std::pair{&g.out, "out"}}) {
    GEMMOPS_TRY(validate_rank(*t, role));
    GEMMOPS_TRY(validate_layout(*t, role));
  }
  GEMMOPS_ASSIGN_OR_RETURN(OperationKind kind, grouped_kind(g));
  GEMMOPS_TRY(validate_group_alignment(g, kind));
  GEMMOPS_TRY(validate_a_row_index(g, kind));
  GEMMOPS_TRY(validate_k_indices(g, kind));
  GEMMOPS_TRY(validate_epilogue_form(g.epilogue, kind));
  switch (kind) {
    case OperationKind::grouped_m:
      GEMMOPS_TRY(validate_grouped_m_shapes(g));
      GEMMOPS_TRY(validate_offsets(g, g.B.size(0), g.out.size(0), "TotalM"));
      GEMMOPS_TRY(validate_aligned_ends(g.offsets, g.group_alignment));
      break;
    case OperationKind::grouped_m_masked:
      GEMMOPS_TRY(validate_grouped_m_masked_shapes(g));
      GEMMOPS_TRY(validate_offsets_form(g.offsets, g.A.size(0)));
      GEMMOPS_TRY(validate_layout(g.offsets, "offsets"));
      GEMMOPS_TRY(validate_offsets_contiguous(g.offsets));
      GEMMOPS_TRY(validate_same_device(g.A, g.offsets, "offsets"));
      GEMMOPS_TRY(validate_counts_values(g.offsets, g.A.size(1)));
      if (g.zero_tail)
        return invalid_argument("zero_tail: the masked form has no tail (each group's rows past its count are "
                                "left untouched); got zero_tail = true");
      break;
    case OperationKind::grouped_n:
      GEMMOPS_TRY(validate_grouped_n_shapes(g));
      GEMMOPS_TRY(validate_offsets(g, g.A.size(0), g.B.size(1), "TotalN"));
      break;
    case OperationKind::grouped_k:
      GEMMOPS_TRY(validate_grouped_k_shapes(g));
      GEMMOPS_TRY(validate_offsets(g, g.out.size(0), total_k(g), "TotalK"));
      GEMMOPS_TRY(validate_k_index_values(g));
      break;
    case OperationKind::gemm:
    case OperationKind::batched_gemm: break;  // grouped_kind() never returns them
  }
  GEMMOPS_TRY(validate_operands(g.A, g.B, g.out, g.accumulator));
  GEMMOPS_TRY(validate_epilogue_operands(g.epilogue, kind, g.B, g.out));
  if (!g.a_scales && !g.b_scales) return Status::ok();
  return validate_scales(Arguments(g));
}

}  // namespace gemmops::detail
