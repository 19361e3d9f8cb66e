// src/arguments/arguments.cpp: validate() and the queries on valid arguments (kind, shape, majors)
// SPDX-License-Identifier: Apache-2.0
#include "gemmops/arguments.hpp"

#include "arguments/rules.hpp"

namespace gemmops {

namespace {
template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;
}  // namespace

namespace detail {

Status validate_memory(const Arguments& args) {
  const TensorDesc& out = operand_out(args);
  GEMMOPS_TRY(validate_no_overlap(out, operand_a(args), "A"));
  GEMMOPS_TRY(validate_no_overlap(out, operand_b(args), "B"));
  if (const auto* g = std::get_if<GroupedGemmArguments>(&args)) {
    GEMMOPS_TRY(validate_no_overlap(out, g->offsets, "offsets"));
    if (g->a_row_index) GEMMOPS_TRY(validate_no_overlap(out, *g->a_row_index, "a_row_index"));
    if (g->a_k_index) GEMMOPS_TRY(validate_no_overlap(out, *g->a_k_index, "a_k_index"));
    if (g->b_k_index) GEMMOPS_TRY(validate_no_overlap(out, *g->b_k_index, "b_k_index"));
  }
  const EpilogueOps& e = epilogue_of(args);
  if (e.bias) GEMMOPS_TRY(validate_no_overlap(out, *e.bias, "epilogue.bias"));
  if (e.row_scale) GEMMOPS_TRY(validate_no_overlap(out, *e.row_scale, "epilogue.row_scale"));
  GEMMOPS_TRY(validate_second_operands_memory(e, out));
  GEMMOPS_TRY(validate_scales_memory(args));
  return Status::ok();
}

Status validate_per_call(const Arguments& args) {
  GEMMOPS_TRY(validate_memory(args));
  return validate_epilogue_scalars(epilogue_of(args));
}

}  // namespace detail

std::string_view name(OperationKind k) {
  switch (k) {
    case OperationKind::gemm: return "gemm";
    case OperationKind::batched_gemm: return "batched_gemm";
    case OperationKind::grouped_m: return "grouped_gemm_m";
    case OperationKind::grouped_k: return "grouped_gemm_k";
    case OperationKind::grouped_n: return "grouped_gemm_n";
    case OperationKind::grouped_m_masked: return "grouped_gemm_m_masked";
  }
  return "unknown";
}

Result<OperationKind> operation_kind(const Arguments& args) {
  return std::visit(Overloaded{[](const GemmArguments& g) { return detail::gemm_kind(g); },
                               [](const GroupedGemmArguments& g) { return detail::grouped_kind(g); }},
                    args);
}

Status validate_structure(const Arguments& args) {
  return std::visit(Overloaded{[](const GemmArguments& g) { return detail::validate_gemm(g); },
                               [](const GroupedGemmArguments& g) { return detail::validate_grouped(g); }},
                    args);
}

Status validate(const Arguments& args) {
  GEMMOPS_TRY(validate_structure(args));
  return detail::validate_per_call(args);
}

Result<ProblemShape> problem_shape(const Arguments& args) {
  GEMMOPS_TRY(validate(args));
  GEMMOPS_ASSIGN_OR_RETURN(OperationKind kind, operation_kind(args));
  const TensorDesc &A = operand_a(args), &B = operand_b(args), &out = operand_out(args);
  ProblemShape p;
  p.kind = kind;
  switch (kind) {
    case OperationKind::gemm: p.m = A.size(0), p.k = A.size(1), p.n = B.size(1), p.groups = 1; break;
    case OperationKind::batched_gemm: p.groups = A.size(0), p.m = A.size(1), p.k = A.size(2), p.n = B.size(2); break;
    case OperationKind::grouped_m: p.m = out.size(0), p.k = A.size(1), p.groups = B.size(0), p.n = B.size(2); break;
    case OperationKind::grouped_k:
      p.m = A.size(0), p.k = detail::total_k(std::get<GroupedGemmArguments>(args));  // (a K index's length)
      p.n = B.size(1), p.groups = out.size(0);
      break;
    case OperationKind::grouped_n: p.groups = A.size(0), p.m = A.size(1), p.k = A.size(2), p.n = B.size(1); break;
    case OperationKind::grouped_m_masked:
      p.groups = A.size(0), p.m = A.size(0) * A.size(1), p.k = A.size(2), p.n = B.size(2);
      break;
  }
  return p;
}

bool a_major(const Arguments& args, Major* major) { return matrix_major(operand_a(args), true, major); }
bool b_major(const Arguments& args, Major* major) { return matrix_major(operand_b(args), false, major); }

const TensorDesc& operand_a(const Arguments& args) {
  return std::visit([](const auto& a) -> const TensorDesc& { return a.A; }, args);
}
const TensorDesc& operand_b(const Arguments& args) {
  return std::visit([](const auto& a) -> const TensorDesc& { return a.B; }, args);
}
const TensorDesc& operand_out(const Arguments& args) {
  return std::visit([](const auto& a) -> const TensorDesc& { return a.out; }, args);
}
DType accumulator_of(const Arguments& args) {
  return std::visit([](const auto& a) { return a.accumulator; }, args);
}
const EpilogueOps& epilogue_of(const Arguments& args) {
  return std::visit([](const auto& a) -> const EpilogueOps& { return a.epilogue; }, args);
}

}  // namespace gemmops
