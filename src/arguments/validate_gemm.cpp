// src/arguments/validate_gemm.cpp: dense (M,K)x(K,N) and batched (L,M,K)x(L,K,N) GEMM rules
// SPDX-License-Identifier: Apache-2.0
#include <string>

#include "arguments/rules.hpp"

namespace gemmops::detail {

namespace {

std::string ranks_of(const GemmArguments& a) {
  return std::to_string(a.A.rank()) + "/" + std::to_string(a.B.rank()) + "/" + std::to_string(a.out.rank());
}

const char* out_dims(const GemmArguments& g, const char* plain, const char* gated) {
  return is_gated(g.epilogue.activation) ? gated : plain;
}

Status validate_gemm_shapes(const GemmArguments& g) {
  const TensorDesc &A = g.A, &B = g.B, &out = g.out;
  const std::string ab = labelled("A", "(M,K)", A) + ", " + labelled("B", "(K,N)", B);
  const std::string ao = labelled("A", "(M,K)", A) + ", " + labelled("out", "(M,N)", out);
  const std::string bo = labelled("B", "(K,N)", B) + ", " + labelled("out", out_dims(g, "(M,N)", "(M,N/2)"), out);
  GEMMOPS_TRY(agree("K", B.size(0), A.size(1), "B", "A", ab));
  GEMMOPS_TRY(agree("M", out.size(0), A.size(0), "out", "A", ao));
  return validate_out_columns(g.epilogue, out.size(1), B.size(1), bo);
}

Status validate_batched_shapes(const GemmArguments& g) {
  const TensorDesc &A = g.A, &B = g.B, &out = g.out;
  const std::string ab = labelled("A", "(L,M,K)", A) + ", " + labelled("B", "(L,K,N)", B);
  const std::string ao = labelled("A", "(L,M,K)", A) + ", " + labelled("out", "(L,M,N)", out);
  const std::string bo =
      labelled("B", "(L,K,N)", B) + ", " + labelled("out", out_dims(g, "(L,M,N)", "(L,M,N/2)"), out);
  GEMMOPS_TRY(agree("L", B.size(0), A.size(0), "B", "A", ab));
  GEMMOPS_TRY(agree("L", out.size(0), A.size(0), "out", "A", ao));
  GEMMOPS_TRY(agree("K", B.size(1), A.size(2), "B", "A", ab));
  GEMMOPS_TRY(agree("M", out.size(1), A.size(1), "out", "A", ao));
  return validate_out_columns(g.epilogue, out.size(2), B.size(2), bo);
}

}  // namespace

Result<OperationKind> gemm_kind(const GemmArguments& g) {
  int a = g.A.rank(), b = g.B.rank(), o = g.out.rank();
  if (a == 2 && b == 2 && o == 2) return OperationKind::gemm;
  if (a == 3 && b == 3 && o == 3) return OperationKind::batched_gemm;
  return invalid_argument("A, B, out: ranks must be 2/2/2 (gemm) or 3/3/3 (batched_gemm); got " + ranks_of(g));
}

Status validate_gemm(const GemmArguments& g) {
  for (auto [t, role] : {std::pair{&g.A, "A"}, std::pair{&g.B, "B"}, std::pair{&g.out, "out"}}) {
    GEMMOPS_TRY(validate_rank(*t, role));
    GEMMOPS_TRY(validate_layout(*t, role));
  }
  GEMMOPS_ASSIGN_OR_RETURN(OperationKind kind, gemm_kind(g));
  GEMMOPS_TRY(kind == OperationKind::gemm ? validate_gemm_shapes(g) : validate_batched_shapes(g));
  GEMMOPS_TRY(validate_operands(g.A, g.B, g.out, g.accumulator));
  GEMMOPS_TRY(validate_epilogue_operands(g.epilogue, kind, g.B, g.out));
  if (!g.a_scales && !g.b_scales) return Status::ok();
  return validate_scales(Arguments(g));
}

}  // namespace gemmops::detail
