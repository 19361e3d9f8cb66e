// tests/support/gather_reduce_problem.hpp: random gather-reduce problems on the host (rows, pair
// rows with sentinels and repeats, scores, row limit) and their expected out, summed as the
// contract says (one fma per choice in choice order, fp32, rounded once)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <random>

#include "gemmops/moe.hpp"
#include "support/host_tensor.hpp"

namespace gemmops::testing {

struct GatherReduceSpec {
  DType in = DType::bf16, out = DType::bf16;
  int64_t rows = 64, tokens = 16, k = 2, h = 64;
  int64_t row_pad = 0;       // extra elements per row of rows and out (a row stride off 16 bytes)
  bool scores = true;
  int64_t row_limit = -1;    // >= 0: the row_limit tensor holds it
  double sentinel_share = 0.1;  // choices pointing at -1, at rows or far past it
  uint32_t seed = 1;
};

struct GatherReduceProblem {
  GatherReduceSpec spec;
  HostTensor rows, pair_rows, scores, row_limit, out;

  static GatherReduceProblem make(const GatherReduceSpec& s) {
    GatherReduceProblem p;
    p.spec = s;
    std::mt19937 rng(s.seed);
    std::uniform_real_distribution<float> value(-2.0f, 2.0f);
    std::uniform_real_distribution<float> share(0.0f, 1.0f);
    p.rows = HostTensor::strided(s.in, {s.rows, s.h}, {s.h + s.row_pad, 1});
    for (int64_t r = 0; r < s.rows; ++r)
      for (int64_t c = 0; c < s.h; ++c) p.rows.set(r * s.h + c, value(rng));
    p.pair_rows = HostTensor::contiguous(DType::i32, {s.tokens, s.k});
    std::uniform_int_distribution<int64_t> row(0, std::max<int64_t>(s.rows - 1, 0));
    const int64_t sentinels[] = {-1, s.rows, s.rows + 1000};
    for (int64_t i = 0; i < s.tokens * s.k; ++i) {
      const bool sentinel = s.rows == 0 || share(rng) < s.sentinel_share;
      p.pair_rows.set(i, static_cast<double>(sentinel ? sentinels[i % 3] : row(rng)));
    }
    p.scores = HostTensor::contiguous(DType::fp32, {s.tokens, s.k});
    for (int64_t i = 0; i < s.tokens * s.k; ++i) p.scores.set(i, share(rng));
    p.row_limit = HostTensor::contiguous(DType::i32, {1});
    p.row_limit.set(0, static_cast<double>(s.row_limit));
    p.out = HostTensor::strided(s.out, {s.tokens, s.h}, {s.h + s.row_pad, 1});
    p.out.poison();
    return p;
  }

  GatherReduceArguments arguments() {
    GatherReduceArguments a{rows.desc, pair_rows.desc, std::nullopt, std::nullopt, out.desc};
    if (spec.scores) a.scores = scores.desc;
    if (spec.row_limit >= 0) a.row_limit = row_limit.desc;
    return a;
  }

  /// The expected out, written into a fresh tensor of out's layout (padding left poisoned).
  HostTensor expected() const {
    HostTensor e = out;
    const int64_t limit = spec.row_limit >= 0 ? std::min(spec.row_limit, spec.rows) : spec.rows;
    for (int64_t t = 0; t < spec.tokens; ++t) {
      for (int64_t c = 0; c < spec.h; ++c) {
        float acc = 0.0f;
        for (int64_t j = 0; j < spec.k; ++j) {
          const auto r = static_cast<int64_t>(pair_rows.get(t * spec.k + j));
          if (r < 0 || r >= limit) continue;
          const auto v = static_cast<float>(rows.get(r * spec.h + c));
          acc = spec.scores ? std::fma(static_cast<float>(scores.get(t * spec.k + j)), v, acc) : acc + v;
        }
        e.set(t * spec.h + c, acc);
      }
    }
    return e;
  }
};

}  // namespace gemmops::testing
