// src/arguments/validate_epilogue.cpp: the epilogue ops' rules: which forms take them, the gated
// column rule, the bias and row-scale operands, and the per-call scalars (alpha, limit)
// SPDX-License-Identifier: Apache-2.0
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "arguments/rules.hpp"

namespace gemmops::detail {

namespace {

std::string shape_of(const TensorDesc& t) { return tuple_string(t.shape.data(), t.shape.size()); }
std::string strides_of(const TensorDesc& t) { return tuple_string(t.strides.data(), t.strides.size()); }
std::string number(float v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = std::to_string(v);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

// What the operands of the epilogue look like for one form: bias (G,N) / (N,) / (L,N) over the
// product's N, row_scale (TotalM,) / (M,) / (L,M).
struct EpilogueShapes {
  std::vector<int64_t> bias, row_scale;
  const char* bias_dims = "";
  const char* row_scale_dims = "";
};

EpilogueShapes shapes_for(OperationKind kind, const TensorDesc& B, const TensorDesc& out) {
  switch (kind) {
    case OperationKind::gemm: return {{B.size(1)}, {out.size(0)}, "(N,)", "(M,)"};
    case OperationKind::batched_gemm: return {{B.size(0), B.size(2)}, {out.size(0), out.size(1)}, "(L,N)", "(L,M)"};
    case OperationKind::grouped_m: return {{B.size(0), B.size(2)}, {out.size(0)}, "(G,N)", "(TotalM,)"};
    case OperationKind::grouped_m_masked:
      return {{B.size(0), B.size(2)}, {out.size(0), out.size(1)}, "(G,N)", "(G,MaxM)"};
    case OperationKind::grouped_k:
    case OperationKind::grouped_n: break;  // no epilogue operands (validate_epilogue_form)
  }
  return {};
}

Status validate_bias_shape(const TensorDesc& bias, const EpilogueShapes& s) {
  if (bias.shape == s.bias) return Status::ok();
  return invalid_argument("epilogue.bias: must have shape " + std::string(s.bias_dims) + " = " +
                          tuple_string(s.bias.data(), s.bias.size()) +
                          " (N is the product's, B's N: 2I with a gated activation); got " + shape_of(bias));
}

Status validate_bias_dtype(const TensorDesc& bias, const TensorDesc& out) {
  if (bias.dtype == DType::fp32 || bias.dtype == out.dtype) return Status::ok();
  return invalid_argument("epilogue.bias: dtype must be fp32 or out's dtype (" + std::string(name(out.dtype)) +
                          "); got " + std::string(name(bias.dtype)));
}

Status validate_bias_last_dim_contiguous(const TensorDesc& bias) {
  if (bias.numel() == 0 || bias.size(-1) <= 1 || bias.stride(-1) == 1) return Status::ok();
  return invalid_argument("epilogue.bias: last dimension must be contiguous (stride 1); got strides " +
                          strides_of(bias));
}

Status validate_row_scale_shape(const TensorDesc& row_scale, const EpilogueShapes& s) {
  if (row_scale.shape == s.row_scale) return Status::ok();
  return invalid_argument("epilogue.row_scale: must have shape " + std::string(s.row_scale_dims) + " = " +
                          tuple_string(s.row_scale.data(), s.row_scale.size()) + "; got " + shape_of(row_scale));
}

Status validate_row_scale_dtype(const TensorDesc& row_scale) {
  if (row_scale.dtype == DType::fp32) return Status::ok();
  return invalid_argument("epilogue.row_scale: dtype must be fp32; got " + std::string(name(row_scale.dtype)));
}

// Row-major without gaps; dimensions that never step (size <= 1) may have any stride.
Status validate_row_scale_contiguous(const TensorDesc& row_scale) {
  if (row_scale.numel() == 0) return Status::ok();
  int64_t want = 1;
  for (int i = row_scale.rank() - 1; i >= 0; --i) {
    if (row_scale.shape[i] > 1 && row_scale.strides[i] != want) {
      return invalid_argument("epilogue.row_scale: must be contiguous (row-major, no gaps); got shape " +
                              shape_of(row_scale) + " strides " + strides_of(row_scale));
    }
    want *= row_scale.shape[i];
  }
  return Status::ok();
}

Status validate_on_out_device(const TensorDesc& t, const TensorDesc& out, const char* role) {
  if (t.device == out.device) return Status::ok();
  return invalid_argument(std::string(role) + ": must be on out's device (" + out.device.to_string() + "); got " +
                          t.device.to_string());
}

}  // namespace

Status validate_epilogue_form(const EpilogueOps& e, OperationKind kind) {
  if (e.empty() || (kind != OperationKind::grouped_k && kind != OperationKind::grouped_n)) return Status::ok();
  const char* form = kind == OperationKind::grouped_k ? "K-grouped" : "N-grouped";
  return invalid_argument("epilogue: the " + std::string(form) + " form (" + std::string(name(kind)) +
                          ") takes no epilogue ops (activation, bias, row_scale); only the M-grouped, dense and "
                          "batched forms do; got activation " + std::string(name(e.activation)) +
                          (e.bias ? ", a bias" : "") + (e.row_scale ? ", a row_scale" : ""));
}

Status validate_out_columns(const EpilogueOps& e, int64_t out_n, int64_t product_n, const std::string& shapes) {
  if (e.activation_grad && e.activation == Activation::none)  // (out's columns depend on the activation)
    return invalid_argument("epilogue.activation_grad: needs the activation whose backward it computes; got "
                            "activation none");
  if (e.activation_grad && is_gated(e.activation)) {  // out = dh: a gate and an up column per product column
    // (out_n / 2 == product_n rather than 2 * product_n: sizes up to INT64_MAX must not overflow)
    if (out_n % 2 == 0 && out_n / 2 == product_n) return Status::ok();
    const std::string twice = product_n <= INT64_MAX / 2 ? std::to_string(2 * product_n)
                                                         : "2 x " + std::to_string(product_n);
    return invalid_argument("out: N (" + std::to_string(out_n) + ") must equal twice B's N (" + twice + ") with activation_grad of a gated activation (out is "
                            "dh, a gate and an up column per product column); " + shapes);
  }
  if (e.activation_grad) return agree("N", out_n, product_n, "out", "B", shapes);
  if (!is_gated(e.activation)) return agree("N", out_n, product_n, "out", "B", shapes);
  const std::string act(name(e.activation));
  if (product_n % 2 != 0) {
    return invalid_argument("epilogue.activation: " + act +
                            " pairs gate and up columns, so the product's N (B's N) must be even; got N = " +
                            std::to_string(product_n) + "; " + shapes);
  }
  if (out_n == product_n / 2) return Status::ok();
  return invalid_argument("out: N (" + std::to_string(out_n) + ") must equal B's N / 2 (" +
                          std::to_string(product_n / 2) + ") with the gated activation " + act +
                          " (one column per gate/up pair); " + shapes);
}

Status validate_epilogue_operands(const EpilogueOps& e, OperationKind kind, const TensorDesc& B,
                                  const TensorDesc& out) {
  GEMMOPS_TRY(validate_second_operands(e, kind, B, out));
  if (!e.bias && !e.row_scale) return Status::ok();
  const EpilogueShapes s = shapes_for(kind, B, out);
  if (e.bias) {
    const TensorDesc& bias = *e.bias;
    GEMMOPS_TRY(validate_layout(bias, "epilogue.bias"));
    GEMMOPS_TRY(validate_bias_shape(bias, s));
    GEMMOPS_TRY(validate_bias_dtype(bias, out));
    GEMMOPS_TRY(validate_bias_last_dim_contiguous(bias));
    GEMMOPS_TRY(validate_on_out_device(bias, out, "epilogue.bias"));
  }
  if (e.row_scale) {
    const TensorDesc& row_scale = *e.row_scale;
    GEMMOPS_TRY(validate_layout(row_scale, "epilogue.row_scale"));
    GEMMOPS_TRY(validate_row_scale_shape(row_scale, s));
    GEMMOPS_TRY(validate_row_scale_dtype(row_scale));
    GEMMOPS_TRY(validate_row_scale_contiguous(row_scale));
    GEMMOPS_TRY(validate_on_out_device(row_scale, out, "epilogue.row_scale"));
  }
  return Status::ok();
}

Status validate_epilogue_scalars(const EpilogueOps& e) {
  // Only swiglu_oss reads them; the other ops ignore whatever they hold.
  if (e.activation != Activation::swiglu_oss) return Status::ok();
  if (!std::isfinite(e.alpha)) return invalid_argument("epilogue.alpha: must be finite; got " + number(e.alpha));
  if (!std::isfinite(e.limit) || e.limit <= 0) {
    return invalid_argument("epilogue.limit: must be finite and greater than 0; got " + number(e.limit));
  }
  return Status::ok();
}

}  // namespace gemmops::detail
