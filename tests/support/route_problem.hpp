// tests/support/route_problem.hpp: a routing (topk_ids, scores) and what route() must make of it, by
// std::stable_sort of the pairs by bucket (the contract's words, not the counting sort's)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "gemmops/moe.hpp"
#include "support/host_tensor.hpp"

namespace gemmops::testing {

struct RouteSpec {
  int64_t tokens = 64;
  int64_t k = 4;
  int experts = 8;
  double sentinel_share = 0.0;  ///< of the pairs, an id outside [0, E) (negative or >= E)
  double skew = 0.0;            ///< of the pairs, expert 0 (one expert taking many)
  bool scores = true;
  uint32_t seed = 1;
};

struct RouteProblem {
  RouteSpec spec;
  HostTensor ids, scores, offsets, token, pair, sorted_scores;

  static RouteProblem make(const RouteSpec& s) {
    RouteProblem p{s, {}, {}, {}, {}, {}, {}};
    const int64_t pairs = s.tokens * s.k;
    p.ids = HostTensor::contiguous(DType::i32, {s.tokens, s.k});
    p.scores = HostTensor::contiguous(DType::fp32, {s.tokens, s.k});
    std::mt19937 rng(s.seed);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::uniform_int_distribution<int> expert(0, s.experts - 1);
    for (int64_t i = 0; i < pairs; ++i) {
      const double x = u(rng);
      int id = expert(rng);
      if (x < s.sentinel_share) id = (i % 2) ? -1 - static_cast<int>(i % 5) : s.experts + static_cast<int>(i % 3);
      else if (x < s.sentinel_share + s.skew) id = 0;
      p.ids.set(i, id);
      p.scores.set(i, u(rng));
    }
    p.offsets = HostTensor::contiguous(DType::i32, {s.experts});
    p.token = HostTensor::contiguous(DType::i32, {pairs});
    p.pair = HostTensor::contiguous(DType::i32, {s.tokens, s.k});
    p.sorted_scores = HostTensor::contiguous(DType::fp32, {pairs});
    for (HostTensor* t : {&p.offsets, &p.token, &p.pair, &p.sorted_scores}) t->poison();
    return p;
  }

  RouteArguments arguments() {
    RouteArguments a{ids.desc, spec.experts, offsets.desc, token.desc, pair.desc, std::nullopt, std::nullopt};
    if (spec.scores) a.scores = scores.desc, a.sorted_scores = sorted_scores.desc;
    return a;
  }

  int bucket(int64_t i) const {
    const auto id = static_cast<int>(ids.get(i));
    return id >= 0 && id < spec.experts ? id : spec.experts;
  }

  /// The pairs in row order: stably sorted by bucket.
  std::vector<int64_t> rows_order() const {
    std::vector<int64_t> order(static_cast<size_t>(ids.numel()));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return bucket(x) < bucket(y); });
    return order;
  }
};

}  // namespace gemmops::testing
