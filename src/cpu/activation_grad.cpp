// src/cpu/activation_grad.cpp: the gated activation's backward, row by row, in fp32 before the one
// rounding of each output to its dtype
// SPDX-License-Identifier: Apache-2.0
#include "cpu/activation_grad.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/element_io.hpp"

namespace gemmops::cpu {
namespace {

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

}  // namespace

GatedValue gated_with_derivatives(const EpilogueOps& ops, float gate, float up) {
  if (ops.activation == Activation::swiglu) {
    const float s = sigmoid(gate);
    return {gate * s * up, up * s * (1.0f + gate * (1.0f - s)), gate * s};
  }
  // swiglu_oss: the clamps' gradient is 1 inside and at their bounds, 0 past them.
  const float g = std::min(gate, ops.limit);
  const float u = std::clamp(up, -ops.limit, ops.limit);
  const float s = sigmoid(ops.alpha * g);
  const float d_gate = gate <= ops.limit ? (u + 1.0f) * s * (1.0f + ops.alpha * g * (1.0f - s)) : 0.0f;
  const float d_up = std::abs(up) <= ops.limit ? g * s : 0.0f;
  return {(u + 1.0f) * g * s, d_gate, d_up};
}

PlainValue plain_with_derivative(Activation a, float x) {
  switch (a) {
    case Activation::silu: {
      const float s = sigmoid(x);
      return {x * s, s * (1.0f + x * (1.0f - s))};
    }
    case Activation::gelu_tanh: {  // 0.5 x (1 + tanh y) = x sigmoid(z), z = 2y = 2 sqrt(2/pi) (x + 0.044715 x^3)
      constexpr float kTwoSqrt2OverPi = 1.5957691216057308f;
      const float s = sigmoid(kTwoSqrt2OverPi * (x + 0.044715f * x * x * x));
      return {x * s, s + x * s * (1.0f - s) * kTwoSqrt2OverPi * (1.0f + 3.0f * 0.044715f * x * x)};
    }
    case Activation::relu_squared: {
      const float r = x > 0.0f ? x : 0.0f;
      return {r * r, 2.0f * r};
    }
    default: return {x, 1.0f};  // none: validate() refuses it with activation_grad
  }
}

void apply_activation_grad(const EpilogueOps& ops, const EpilogueRows& r) {
  if (!is_gated(ops.activation)) return apply_plain_grad(ops, r);
  const int64_t n = r.n;
  const bool interleaved = ops.gate_layout == GateLayout::interleaved;
  const int64_t chunks = score_grad_chunks(n);
  std::vector<float> dh(static_cast<size_t>(2 * n)), scaled(static_cast<size_t>(n));
  std::vector<float> partials(static_cast<size_t>(chunks));
  for (int64_t i = 0; i < r.rows; ++i) {
    const float* da = r.acc + i * r.ld;
    const std::byte* h = r.h + i * r.h_row_stride * static_cast<int64_t>(size_of(r.h_dtype));
    const float s = r.row_scale ? r.row_scale[i] : 1.0f;
    std::fill(partials.begin(), partials.end(), 0.0f);
    for (int64_t c = 0; c < n; ++c) {
      const int64_t gate_col = interleaved ? 2 * c : c, up_col = interleaved ? 2 * c + 1 : n + c;
      const GatedValue v =
          gated_with_derivatives(ops, load_float(h, r.h_dtype, gate_col), load_float(h, r.h_dtype, up_col));
      dh[gate_col] = s * da[c] * v.d_gate;
      dh[up_col] = s * da[c] * v.d_up;
      scaled[c] = s * v.act;
      partials[c / kScoreGradChunk] += da[c] * v.act;
    }
    store_tile(dh.data(), 0, r.out, i, 1, 0, 2 * n);
    store_tile(scaled.data(), 0, r.scaled_activation, i, 1, 0, n);
    store_tile(partials.data(), 0, r.score_grad_partials, i, 1, 0, chunks);
  }
}

// The plain activations: h, dh and s act(h) have the product's n columns.
void apply_plain_grad(const EpilogueOps& ops, const EpilogueRows& r) {
  const int64_t n = r.n, chunks = score_grad_chunks(n);
  std::vector<float> dh(static_cast<size_t>(n)), scaled(static_cast<size_t>(n));
  std::vector<float> partials(static_cast<size_t>(chunks));
  for (int64_t i = 0; i < r.rows; ++i) {
    const float* da = r.acc + i * r.ld;
    const std::byte* h = r.h + i * r.h_row_stride * static_cast<int64_t>(size_of(r.h_dtype));
    const float s = r.row_scale ? r.row_scale[i] : 1.0f;
    std::fill(partials.begin(), partials.end(), 0.0f);
    for (int64_t c = 0; c < n; ++c) {
      const PlainValue v = plain_with_derivative(ops.activation, load_float(h, r.h_dtype, c));
      dh[c] = s * da[c] * v.d;
      scaled[c] = s * v.act;
      partials[c / kScoreGradChunk] += da[c] * v.act;
    }
    store_tile(dh.data(), 0, r.out, i, 1, 0, n);
    store_tile(scaled.data(), 0, r.scaled_activation, i, 1, 0, n);
    store_tile(partials.data(), 0, r.score_grad_partials, i, 1, 0, chunks);
  }
}

void zero_second_outputs(const EpilogueOps& ops, const EpilogueRows& r) {
  const std::vector<float> zeros(static_cast<size_t>(2 * r.n), 0.0f);
  if (ops.pre_activation) store_tile(zeros.data(), 0, r.pre_activation, 0, 1, 0, r.n);
  if (!ops.activation_grad) return;
  store_tile(zeros.data(), 0, r.scaled_activation, 0, 1, 0, r.n);
  store_tile(zeros.data(), 0, r.score_grad_partials, 0, 1, 0, score_grad_chunks(r.n));
}

}  // namespace gemmops::cpu
