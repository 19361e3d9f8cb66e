// tests/support/activation_grad_reference.hpp: the gated activation's backward (ActivationGrad in
// epilogue.hpp) in float64, written straight from the formulas, for the CPU and GPU tests
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "gemmops/epilogue.hpp"

namespace gemmops::testing {

struct GatedGrad {
  double act, d_gate, d_up;
};

/// act(gate, up) and its partial derivatives. swiglu_oss: the clamps pass the gradient inside and
/// at their bounds (torch's clamp), none past them.
inline GatedGrad gated_grad(const EpilogueOps& e, double gate, double up) {
  const auto sigmoid = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  if (e.activation == Activation::swiglu) {
    const double s = sigmoid(gate);
    return {gate * s * up, up * s * (1.0 + gate * (1.0 - s)), gate * s};
  }
  const double alpha = e.alpha, limit = e.limit;
  const double g = std::min(gate, limit), u = std::clamp(up, -limit, limit), s = sigmoid(alpha * g);
  return {(u + 1.0) * g * s, gate <= limit ? (u + 1.0) * s * (1.0 + alpha * g * (1.0 - s)) : 0.0,
          std::abs(up) <= limit ? g * s : 0.0};
}

/// act(x) and act'(x) of a plain activation.
inline GatedGrad plain_grad(Activation a, double x) {
  const auto sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  switch (a) {
    case Activation::silu: return {x * sigmoid(x), sigmoid(x) * (1.0 + x * (1.0 - sigmoid(x))), 0.0};
    case Activation::gelu_tanh: {  // 0.5 x (1 + tanh y), y = sqrt(2/pi) (x + 0.044715 x^3)
      const double k = std::sqrt(2.0 / 3.14159265358979323846), t = std::tanh(k * (x + 0.044715 * x * x * x));
      return {0.5 * x * (1.0 + t), 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * x * x), 0.0};
    }
    case Activation::relu_squared: return {x > 0 ? x * x : 0.0, x > 0 ? 2.0 * x : 0.0, 0.0};
    default: return {x, 1.0, 0.0};
  }
}

/// One row's outputs: dh (2I, in e.gate_layout; I with a plain activation), s act(h) (I) and the
/// 64-column partials of dA act(h).
struct ActivationGradRow {
  std::vector<double> dh, scaled, partials;
};

/// From one row of dA (I values), of h (2I values in e.gate_layout, or I) and the row's score s.
inline ActivationGradRow activation_grad_row(const EpilogueOps& e, const std::vector<double>& da,
                                             const std::vector<double>& h, double s) {
  const auto n = static_cast<int64_t>(da.size());
  if (!is_gated(e.activation)) {
    ActivationGradRow r{std::vector<double>(static_cast<size_t>(n)), std::vector<double>(static_cast<size_t>(n)),
                        std::vector<double>(static_cast<size_t>(score_grad_chunks(n)))};
    for (int64_t c = 0; c < n; ++c) {
      const auto k = static_cast<size_t>(c);
      const GatedGrad v = plain_grad(e.activation, h[k]);  // (d in d_gate)
      r.dh[k] = s * da[k] * v.d_gate;
      r.scaled[k] = s * v.act;
      r.partials[static_cast<size_t>(c / kScoreGradChunk)] += da[k] * v.act;
    }
    return r;
  }
  const bool inter = e.gate_layout == GateLayout::interleaved;
  ActivationGradRow r{std::vector<double>(static_cast<size_t>(2 * n)), std::vector<double>(static_cast<size_t>(n)),
                      std::vector<double>(static_cast<size_t>(score_grad_chunks(n)))};
  for (int64_t c = 0; c < n; ++c) {
    const auto gate = static_cast<size_t>(inter ? 2 * c : c), up = static_cast<size_t>(inter ? 2 * c + 1 : n + c);
    const GatedGrad v = gated_grad(e, h[gate], h[up]);
    const double d = da[static_cast<size_t>(c)];
    r.dh[gate] = s * d * v.d_gate;
    r.dh[up] = s * d * v.d_up;
    r.scaled[static_cast<size_t>(c)] = s * v.act;
    r.partials[static_cast<size_t>(c / kScoreGradChunk)] += d * v.act;
  }
  return r;
}

}  // namespace gemmops::testing
