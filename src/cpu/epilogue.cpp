// src/cpu/epilogue.cpp: the epilogue ops, row by row, in fp32 before the one rounding to out's dtype
// SPDX-License-Identifier: Apache-2.0
#include "cpu/epilogue.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/activation_grad.hpp"
#include "cpu/element_io.hpp"

namespace gemmops::cpu {
namespace {

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float silu(float x) { return x * sigmoid(x); }

float activate(Activation a, float x) {
  switch (a) {
    case Activation::silu: return silu(x);
    case Activation::gelu_tanh: {
      constexpr float kSqrt2OverPi = 0.7978845608028654f;
      return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
    }
    case Activation::relu_squared: {
      const float r = x > 0.0f ? x : 0.0f;
      return r * r;
    }
    default: return x;  // none (the gated ones take two values)
  }
}

float gated(const EpilogueOps& ops, float gate, float up) {
  if (ops.activation == Activation::swiglu) return silu(gate) * up;
  // swiglu_oss (gpt-oss): the gate clamped from above, up from both sides.
  const float g = std::min(gate, ops.limit);
  const float u = std::clamp(up, -ops.limit, ops.limit);
  return (u + 1.0f) * g * sigmoid(ops.alpha * g);
}

}  // namespace

void apply_epilogue(const EpilogueOps& ops, const EpilogueRows& r) {
  if (ops.activation_grad) return apply_activation_grad(ops, r);
  const bool is_gate = is_gated(ops.activation);
  const int64_t n_out = is_gate ? r.n / 2 : r.n;
  std::vector<float> v(static_cast<size_t>(r.n)), result(static_cast<size_t>(n_out));
  for (int64_t i = 0; i < r.rows; ++i) {
    const float* acc = r.acc + i * r.ld;
    for (int64_t j = 0; j < r.n; ++j) v[j] = acc[j] + (r.bias ? load_float(r.bias, r.bias_dtype, j) : 0.0f);
    if (ops.pre_activation) store_tile(v.data(), 0, r.pre_activation, i, 1, 0, r.n);
    for (int64_t j = 0; j < n_out; ++j) {
      if (!is_gate) {
        result[j] = activate(ops.activation, v[j]);
      } else if (ops.gate_layout == GateLayout::interleaved) {
        result[j] = gated(ops, v[2 * j], v[2 * j + 1]);
      } else {
        result[j] = gated(ops, v[j], v[n_out + j]);
      }
      if (r.row_scale) result[j] *= r.row_scale[i];
    }
    store_tile(result.data(), n_out, r.out, i, 1, 0, n_out);
  }
}

}  // namespace gemmops::cpu
