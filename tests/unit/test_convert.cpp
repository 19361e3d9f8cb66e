// tests/unit/test_convert.cpp: float <-> bf16/fp16/e4m3/e5m2 against an independent brute-force rounding
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "cpu/convert.hpp"

namespace gemmops::cpu {
namespace {

// A format described by its bit fields only, decoded with ldexp: independent of convert.hpp.
struct Format {
  const char* name;
  int exp_bits, mant_bits;
  bool fn;  // e4m3fn: no infinity, only the all-ones pattern is NaN
  float (*decode)(uint32_t);
  uint32_t (*encode)(float);

  uint32_t codes() const { return 1u << (1 + exp_bits + mant_bits); }
  uint32_t sign_bit() const { return 1u << (exp_bits + mant_bits); }
  bool is_nan(uint32_t c) const {
    const uint32_t e = (c >> mant_bits) & ((1u << exp_bits) - 1), m = c & ((1u << mant_bits) - 1);
    if (e != (1u << exp_bits) - 1) return false;
    return fn ? m == (1u << mant_bits) - 1 : m != 0;
  }
  bool is_inf(uint32_t c) const {
    return !fn && (c & ~sign_bit()) == ((1u << exp_bits) - 1) << mant_bits;
  }
  double value(uint32_t c) const {  // finite codes only
    const int bias = (1 << (exp_bits - 1)) - 1;
    const uint32_t e = (c >> mant_bits) & ((1u << exp_bits) - 1), m = c & ((1u << mant_bits) - 1);
    const double v = e == 0 ? std::ldexp(double(m), 1 - bias - mant_bits)
                            : std::ldexp(double(m + (1u << mant_bits)), int(e) - bias - mant_bits);
    return (c & sign_bit()) ? -v : v;
  }
};

const Format kFormats[] = {
    {"bf16", 8, 7, false, [](uint32_t c) { return bf16_to_float(uint16_t(c)); },
     [](float f) { return uint32_t{float_to_bf16(f)}; }},
    {"fp16", 5, 10, false, [](uint32_t c) { return fp16_to_float(uint16_t(c)); },
     [](float f) { return uint32_t{float_to_fp16(f)}; }},
    {"e4m3", 4, 3, true, [](uint32_t c) { return e4m3_to_float(uint8_t(c)); },
     [](float f) { return uint32_t{float_to_e4m3(f)}; }},
    {"e5m2", 5, 2, false, [](uint32_t c) { return e5m2_to_float(uint8_t(c)); },
     [](float f) { return uint32_t{float_to_e5m2(f)}; }},
};

// Round to nearest, ties to the even code, by search over every non-negative finite value;
// beyond the largest value the grid continues one step (the code after it) and lands on overflow.
class BruteRounding {
 public:
  explicit BruteRounding(const Format& f) : f_(f) {
    for (uint32_t c = 0; c < f.sign_bit(); ++c)
      if (!f.is_nan(c) && !f.is_inf(c)) grid_.push_back({f.value(c), c});
  }
  // The code, or kNanCode for a NaN result (formats have several NaN codes).
  static constexpr uint32_t kNanCode = 0xffffffffu;
  uint32_t round(float x) const {
    if (std::isnan(x)) return kNanCode;
    const uint32_t sign = std::signbit(x) ? f_.sign_bit() : 0;
    const double a = std::fabs(double(x));
    const auto& top = grid_.back();
    const double next = top.first + (top.first - grid_[grid_.size() - 2].first);
    auto overflow = [&] { return f_.fn ? kNanCode : (sign | (((1u << f_.exp_bits) - 1) << f_.mant_bits)); };
    if (std::isinf(x)) return overflow();
    if (a >= top.first) {
      const double mid = (top.first + next) / 2;
      if (a < mid || (a == mid && top.second % 2 == 0)) return sign | top.second;
      return overflow();
    }
    auto hi = std::lower_bound(grid_.begin(), grid_.end(), std::make_pair(a, 0u));
    if (hi->first == a) return sign | hi->second;
    auto lo = hi - 1;
    const double dl = a - lo->first, dh = hi->first - a;
    if (dl < dh) return sign | lo->second;
    if (dh < dl) return sign | hi->second;
    return sign | (lo->second % 2 == 0 ? lo->second : hi->second);
  }
  const std::vector<std::pair<double, uint32_t>>& grid() const { return grid_; }

 private:
  const Format& f_;
  std::vector<std::pair<double, uint32_t>> grid_;
};

void expect_encodes_like_brute(const Format& f, const BruteRounding& brute, float x) {
  const uint32_t want = brute.round(x), got = f.encode(x);
  if (want == BruteRounding::kNanCode) {
    EXPECT_TRUE(f.is_nan(got)) << f.name << " " << x << " -> " << got << ", want NaN";
  } else {
    EXPECT_EQ(got, want) << f.name << " " << x;
  }
}

TEST(Convert, decode_matches_the_bit_fields_for_every_code) {
  for (const Format& f : kFormats) {
    for (uint32_t c = 0; c < f.codes(); ++c) {
      const float v = f.decode(c);
      if (f.is_nan(c)) {
        EXPECT_TRUE(std::isnan(v)) << f.name << " code " << c;
      } else if (f.is_inf(c)) {
        EXPECT_TRUE(std::isinf(v) && std::signbit(v) == bool(c & f.sign_bit())) << f.name << " " << c;
      } else {
        ASSERT_EQ(double(v), f.value(c)) << f.name << " code " << c;
        EXPECT_EQ(std::signbit(v), bool(c & f.sign_bit())) << f.name << " code " << c;
      }
    }
  }
}

TEST(Convert, every_code_round_trips_and_nan_stays_nan) {
  for (const Format& f : kFormats) {
    for (uint32_t c = 0; c < f.codes(); ++c) {
      const uint32_t back = f.encode(f.decode(c));
      if (f.is_nan(c)) {
        EXPECT_TRUE(f.is_nan(back)) << f.name << " code " << c;
      } else {
        ASSERT_EQ(back, c) << f.name;
      }
    }
  }
}

TEST(Convert, midpoints_and_their_neighbours_round_to_nearest_even) {
  for (const Format& f : kFormats) {
    const BruteRounding brute(f);
    const auto& g = brute.grid();
    for (size_t i = 0; i + 1 < g.size(); ++i) {
      const auto mid = static_cast<float>((g[i].first + g[i + 1].first) / 2);  // exact in float
      for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) {
        expect_encodes_like_brute(f, brute, x);
        expect_encodes_like_brute(f, brute, -x);
      }
    }
  }
}

TEST(Convert, overflow_gives_inf_except_nan_for_e4m3fn) {
  EXPECT_EQ(float_to_e4m3(448.0f), 0x7e);
  EXPECT_EQ(float_to_e4m3(464.0f), 0x7e);  // the tie goes to the even 448
  EXPECT_EQ(float_to_e4m3(465.0f), 0x7f);
  EXPECT_EQ(float_to_e4m3(-1e9f), 0xff);
  EXPECT_EQ(float_to_e4m3(std::numeric_limits<float>::infinity()), 0x7f);
  EXPECT_EQ(float_to_e5m2(57344.0f), 0x7b);
  EXPECT_EQ(float_to_e5m2(61440.0f), 0x7c);  // the tie goes to the even code, which is inf
  EXPECT_EQ(float_to_e5m2(-1e9f), 0xfc);
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7c00);
  EXPECT_EQ(float_to_fp16(65519.0f), 0x7bff);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(float_to_e4m3(std::nanf("")), 0x7f);
  EXPECT_EQ(float_to_e5m2(std::nanf("")), 0x7f);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
  EXPECT_EQ(e4m3_to_float(0x01), 0x1p-9f);
  EXPECT_EQ(e5m2_to_float(0x01), 0x1p-16f);
  EXPECT_EQ(fp16_to_float(0x0001), 0x1p-24f);
}

TEST(Convert, random_floats_round_like_the_brute_force_search) {
  std::mt19937 rng(1234);
  std::uniform_int_distribution<uint32_t> bits;
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> exp(-30, 20);
  for (const Format& f : kFormats) {
    const BruteRounding brute(f);
    for (int i = 0; i < 200000; ++i) {
      expect_encodes_like_brute(f, brute, std::bit_cast<float>(bits(rng)));  // every range, NaN too
      expect_encodes_like_brute(f, brute, std::ldexp(mant(rng), exp(rng)) * (i % 2 ? 1.0f : -1.0f));
      if (::testing::Test::HasFailure()) return;
    }
  }
}

}  // namespace
}  // namespace gemmops::cpu
