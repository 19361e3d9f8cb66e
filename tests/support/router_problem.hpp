// tests/support/router_problem.hpp: a router's logits (distinct per token, so the choice is one), an
// optional selection bias and upstream gradient, and the softmax-top-k and its gradient in float64 by
// the chain rule through p (the contract's words, not the kernels' formula)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "gemmops/moe.hpp"
#include "support/host_tensor.hpp"

namespace gemmops::testing {

struct RouterSpec {
  int64_t tokens = 64;
  int experts = 8;
  int k = 2;
  DType dtype = DType::fp32;
  bool renormalize = false;
  int bias = 0;              ///< 0 none, 1 (E,), 2 (T, E): 2.0 on a few experts, else 0 (a forced routing)
  int64_t row_pad = 0;       ///< logits' row stride E + row_pad
  uint32_t seed = 1;
};

struct RouterProblem {
  RouterSpec spec;
  HostTensor logits, bias, ids, weights, grad_weights, grad_logits;

  static RouterProblem make(const RouterSpec& s) {
    RouterProblem p{s, {}, {}, {}, {}, {}, {}};
    p.logits = HostTensor::strided(s.dtype, {s.tokens, s.experts}, {s.experts + s.row_pad, 1});
    std::mt19937 rng(s.seed);
    std::vector<int> perm(static_cast<size_t>(s.experts));
    // Distinct logits per token, exactly representable in bf16 (multiples of 1/16 below 8): the
    // probabilities keep their order on any device, so the choice is the contract's alone.
    const double step = s.experts <= 128 ? 1.0 / 16 : 1.0 / 128;
    for (int64_t t = 0; t < s.tokens; ++t) {
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      for (int e = 0; e < s.experts; ++e) {
        const double z = (perm[static_cast<size_t>(e)] - s.experts / 2) * step;
        p.logits.set(t * s.experts + e, z);
      }
    }
    if (s.bias != 0) {
      p.bias = s.bias == 1 ? HostTensor::contiguous(DType::fp32, {s.experts})
                           : HostTensor::contiguous(DType::fp32, {s.tokens, s.experts});
      std::uniform_int_distribution<int> forced(0, 3);
      for (int64_t i = 0; i < p.bias.numel(); ++i) p.bias.set(i, forced(rng) == 0 ? 2.0 : 0.0);
    }
    p.ids = HostTensor::contiguous(DType::i32, {s.tokens, s.k});
    p.weights = HostTensor::contiguous(DType::fp32, {s.tokens, s.k});
    p.grad_weights = HostTensor::contiguous(DType::fp32, {s.tokens, s.k});
    std::normal_distribution<double> normal(0.0, 1.0);
    for (int64_t i = 0; i < p.grad_weights.numel(); ++i) p.grad_weights.set(i, normal(rng));
    p.grad_logits = HostTensor::strided(s.dtype, {s.tokens, s.experts}, {s.experts + s.row_pad, 1});
    for (HostTensor* t : {&p.ids, &p.weights, &p.grad_logits}) t->poison();
    return p;
  }

  RouterTopkArguments arguments() {
    RouterTopkArguments a{logits.desc, spec.k, spec.renormalize, std::nullopt, ids.desc, weights.desc};
    if (spec.bias != 0) a.selection_bias = bias.desc;
    return a;
  }
  RouterTopkBackwardArguments backward_arguments() {
    return {logits.desc, ids.desc, grad_weights.desc, spec.renormalize, grad_logits.desc};
  }

  std::vector<double> probabilities(int64_t t) const {
    std::vector<double> p(static_cast<size_t>(spec.experts));
    double m = -INFINITY, s = 0;
    for (int e = 0; e < spec.experts; ++e) m = std::max(m, logits.get(t * spec.experts + e));
    for (int e = 0; e < spec.experts; ++e) s += (p[static_cast<size_t>(e)] = std::exp(logits.get(t * spec.experts + e) - m));
    for (double& v : p) v /= s;
    return p;
  }
  double key(int64_t t, int e, const std::vector<double>& p) const {
    double b = 0;
    if (spec.bias == 1) b = bias.get(e);
    if (spec.bias == 2) b = bias.get(t * spec.experts + e);
    return p[static_cast<size_t>(e)] + b;
  }
  /// Token t's experts, largest key first (a tie: the lower id).
  std::vector<int> choice(int64_t t) const {
    const std::vector<double> p = probabilities(t);
    std::vector<int> order(static_cast<size_t>(spec.experts));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return key(t, x, p) > key(t, y, p); });
    order.resize(static_cast<size_t>(spec.k));
    return order;
  }
  double weight(int64_t t, int j) const {
    const std::vector<double> p = probabilities(t);
    const std::vector<int> c = choice(t);
    double sum = 0;
    for (int e : c) sum += p[static_cast<size_t>(e)];
    const double w = p[static_cast<size_t>(c[static_cast<size_t>(j)])];
    return spec.renormalize ? w / sum : w;
  }
  /// d(sum_j grad_weights[t, j] w_j) / d logits[t, e] for the forward's choice (ids as they are).
  std::vector<double> logits_gradient(int64_t t) const {
    const std::vector<double> p = probabilities(t);
    const int E = spec.experts;
    std::vector<double> dp(static_cast<size_t>(E), 0.0);  // dL/dp_m
    double sum = 0;
    for (int j = 0; j < spec.k; ++j) sum += p[static_cast<size_t>(ids.get(t * spec.k + j))];
    for (int j = 0; j < spec.k; ++j) {
      const int idj = static_cast<int>(ids.get(t * spec.k + j));
      const double dw = grad_weights.get(t * spec.k + j);
      if (!spec.renormalize) {
        dp[static_cast<size_t>(idj)] += dw;
        continue;
      }
      // w_j = p_idj / S, S = sum over the choice: dw_j / S at idj, -dw_j p_idj / S^2 at every chosen m.
      dp[static_cast<size_t>(idj)] += dw / sum;
      for (int l = 0; l < spec.k; ++l)
        dp[static_cast<size_t>(ids.get(t * spec.k + l))] -= dw * p[static_cast<size_t>(idj)] / (sum * sum);
    }
    std::vector<double> dz(static_cast<size_t>(E), 0.0);  // dp_m / dz_e = p_m (delta_me - p_e)
    for (int e = 0; e < E; ++e)
      for (int m = 0; m < E; ++m)
        dz[static_cast<size_t>(e)] += dp[static_cast<size_t>(m)] * p[static_cast<size_t>(m)] * ((m == e) - p[static_cast<size_t>(e)]);
    return dz;
  }
};

}  // namespace gemmops::testing
