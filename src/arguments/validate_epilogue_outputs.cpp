// src/arguments/validate_epilogue_outputs.cpp: the rules of the epilogue's second operands: the
// forward's pre_activation output and the activation's backward (activation_grad)
// SPDX-License-Identifier: Apache-2.0
#include <cstdint>
#include <string>
#include <vector>

#include "arguments/rules.hpp"

namespace gemmops::detail {

namespace {

std::string shape_of(const TensorDesc& t) { return tuple_string(t.shape.data(), t.shape.size()); }

Status validate_matrix(const TensorDesc& t, const std::string& role, const std::vector<int64_t>& shape,
                       const char* dims, DType dtype, const char* dtype_rule, const TensorDesc& out) {
  GEMMOPS_TRY(validate_layout(t, role));
  if (t.shape != shape)
    return invalid_argument(role + ": must have shape " + dims + " = " + tuple_string(shape.data(), shape.size()) +
                            "; got " + shape_of(t));
  if (t.dtype != dtype)
    return invalid_argument(role + ": dtype must be " + dtype_rule + " (" + std::string(name(dtype)) + "); got " +
                            std::string(name(t.dtype)));
  if (t.numel() > 0 && t.size(-1) > 1 && t.stride(-1) != 1)
    return invalid_argument(role + ": last dimension must be contiguous (stride 1); got stride " +
                            std::to_string(t.stride(-1)));
  if (t.device != out.device)
    return invalid_argument(role + ": must be on out's device (" + out.device.to_string() + "); got " +
                            t.device.to_string());
  return Status::ok();
}

Status validate_m_grouped_only(OperationKind kind, const char* role) {
  if (kind == OperationKind::grouped_m) return Status::ok();
  return invalid_argument(std::string(role) + ": only the M-grouped form (grouped_gemm_m) takes it; got " +
                          std::string(name(kind)));
}

Status validate_pre_activation(const EpilogueOps& e, const TensorDesc& B, const TensorDesc& out) {
  if (e.activation == Activation::none)
    return invalid_argument("epilogue.pre_activation: needs an activation (without one it would equal out); got "
                            "activation none");
  if (e.activation_grad)
    return invalid_argument("epilogue.pre_activation: the forward's second output; with activation_grad the "
                            "saved pre-activation is activation_grad.pre_activation");
  return validate_matrix(*e.pre_activation, "epilogue.pre_activation", {out.size(0), B.size(2)},
                         "(TotalM, N) over the product's N (B's N)", out.dtype, "out's dtype", out);
}

Status validate_activation_grad(const EpilogueOps& e, const TensorDesc& B, const TensorDesc& out) {
  if (e.activation == Activation::none)
    return invalid_argument("epilogue.activation_grad: needs the activation whose backward it computes; got "
                            "activation none");
  if (e.bias)
    return invalid_argument("epilogue.activation_grad: takes no bias (the product is the gradient dA; the "
                            "forward's bias is already in the saved pre-activation)");
  const ActivationGrad& g = *e.activation_grad;
  const int64_t rows = out.size(0), i = B.size(2);
  if (i > INT32_MAX)  // (2I and ceil(I / 64) below must not overflow; no kernel indexes more columns)
    return invalid_argument("epilogue.activation_grad: B's N (I) must be below 2^31; got " + std::to_string(i));
  if (is_gated(e.activation)) {
    GEMMOPS_TRY(validate_matrix(g.pre_activation, "epilogue.activation_grad.pre_activation", {rows, 2 * i},
                                "(TotalM, 2I), I = B's N, with a gated activation", out.dtype, "out's dtype", out));
  } else {
    GEMMOPS_TRY(validate_matrix(g.pre_activation, "epilogue.activation_grad.pre_activation", {rows, i},
                                "(TotalM, I), I = B's N, with a plain activation", out.dtype, "out's dtype", out));
  }
  GEMMOPS_TRY(validate_matrix(g.scaled_activation, "epilogue.activation_grad.scaled_activation", {rows, i},
                              "(TotalM, I), I = B's N", out.dtype, "out's dtype", out));
  return validate_matrix(g.score_grad_partials, "epilogue.activation_grad.score_grad_partials",
                         {rows, score_grad_chunks(i)}, "(TotalM, ceil(I / 64)), I = B's N", DType::fp32, "fp32",
                         out);
}

}  // namespace

Status validate_second_operands(const EpilogueOps& e, OperationKind kind, const TensorDesc& B,
                                const TensorDesc& out) {
  if (e.pre_activation) {
    GEMMOPS_TRY(validate_m_grouped_only(kind, "epilogue.pre_activation"));
    GEMMOPS_TRY(validate_pre_activation(e, B, out));
  }
  if (e.activation_grad) {
    GEMMOPS_TRY(validate_m_grouped_only(kind, "epilogue.activation_grad"));
    GEMMOPS_TRY(validate_activation_grad(e, B, out));
  }
  return Status::ok();
}

Status validate_second_operands_memory(const EpilogueOps& e, const TensorDesc& out) {
  if (e.pre_activation) GEMMOPS_TRY(validate_no_overlap(out, *e.pre_activation, "epilogue.pre_activation"));
  if (!e.activation_grad) return Status::ok();
  const ActivationGrad& g = *e.activation_grad;
  GEMMOPS_TRY(validate_no_overlap(out, g.pre_activation, "epilogue.activation_grad.pre_activation"));
  GEMMOPS_TRY(validate_no_overlap(out, g.scaled_activation, "epilogue.activation_grad.scaled_activation"));
  return validate_no_overlap(out, g.score_grad_partials, "epilogue.activation_grad.score_grad_partials");
}

}  // namespace gemmops::detail
