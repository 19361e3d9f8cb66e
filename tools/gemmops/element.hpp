// tools/gemmops/element.hpp: host encoding and decoding of single elements of every float dtype
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <span>

#include "gemmops/dtype.hpp"

namespace gemmops::cli {

/// Writes `value` as one element of `dtype` at `dst` (size_of(dtype) bytes). Exact for values the
/// dtype represents as normal numbers or zero, which is all the CLI ever writes; others truncate.
void encode_element(DType dtype, float value, unsigned char* dst);

/// Reads one element of `dtype` at `src` (NaN and infinities included).
double decode_element(DType dtype, const unsigned char* src);

/// splitmix64: the same sequence on every platform, unlike the std:: distributions.
struct SplitMix64 {
  uint64_t state;
  explicit SplitMix64(uint64_t seed) : state(seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull) {}
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

/// Fills `bytes` (whole elements of `dtype`) with seeded values of the form j/8, |j| <= 8: exact in
/// every dtype, so products and fp32 sums are exact and only the output rounding remains.
void fill_random(DType dtype, std::span<unsigned char> bytes, uint64_t seed);

}  // namespace gemmops::cli
