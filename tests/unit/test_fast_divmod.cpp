// tests/unit/test_fast_divmod.cpp: the tile scheduler's multiply-shift divisor equals integer
// division (host path; tests/gpu/test_fast_divmod_device.cpp runs the device path)
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/fast_divmod.cuh"

namespace gemmops::kernels::common {
namespace {

std::vector<int> divisors() {
  std::vector<int> d;
  for (int i = 1; i <= 300; ++i) d.push_back(i);
  for (int p = 9; p < 31; ++p) {  // around every power of two, where the shift changes
    d.push_back((1 << p) - 1);
    d.push_back(1 << p);
    d.push_back((1 << p) + 1);
  }
  for (int v : {641, 6700417, 1000003, 2147483647}) d.push_back(v);
  return d;
}

TEST(FastDivisor, equals_integer_division_near_zero_near_multiples_and_near_int_max) {
  for (int d : divisors()) {
    const FastDivisor by(d);
    auto check = [&](int64_t x) {
      if (x < 0 || x > INT32_MAX) return;
      ASSERT_EQ(by.quotient(int(x)), int(x / d)) << "x=" << x << " d=" << d;
    };
    for (int64_t x = 0; x < 4096; ++x) check(x);
    for (int64_t q : {int64_t{1}, int64_t{2}, int64_t{1000}, int64_t{INT32_MAX} / d, int64_t{INT32_MAX} / d - 1})
      for (int64_t e = -2; e <= 2; ++e) check(q * d + e);
    for (int64_t x = INT32_MAX - 4096; x <= INT32_MAX; ++x) check(x);
  }
}

TEST(FastDivisor, every_numerator_below_2_to_the_22_for_the_schedulers_divisors) {
  // Tile numbers stay far below 2^22; the raster band and tile counts are small divisors.
  for (int d : {1, 2, 3, 5, 6, 7, 12, 28, 45, 56, 112, 96 * 7}) {
    const FastDivisor by(d);
    for (int x = 0; x < (1 << 22); ++x) ASSERT_EQ(by.quotient(x), x / d) << "x=" << x << " d=" << d;
  }
}

TEST(FastDivisor, a_non_positive_divisor_is_taken_as_one) {
  EXPECT_EQ(FastDivisor(0).quotient(17), 17);
  EXPECT_EQ(FastDivisor(-3).quotient(17), 17);
}

}  // namespace
}  // namespace gemmops::kernels::common
