// tools/gemmops/element.cpp: bit-level conversions (no half-precision type is needed on the host)
// SPDX-License-Identifier: Apache-2.0
#include "element.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace gemmops::cli {
namespace {

struct Format {
  int exp_bits, man_bits;
  bool finite_only;  // e4m3 "fn": no infinities, only all-ones is NaN
};

Format format_of(DType t) {
  switch (t) {
    case DType::bf16: return {8, 7, false};
    case DType::fp16: return {5, 10, false};
    case DType::e4m3: return {4, 3, true};
    case DType::e5m2: return {5, 2, false};
    default: return {8, 23, false};
  }
}

uint32_t encode_bits(float value, Format f) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  uint32_t sign = bits >> 31;
  int exp = int((bits >> 23) & 0xFF) - 127;
  uint32_t man = bits & 0x7FFFFF;
  uint32_t out_sign = sign << (f.exp_bits + f.man_bits);
  if (value == 0.0f) return out_sign;
  int bias = (1 << (f.exp_bits - 1)) - 1;
  return out_sign | (uint32_t(exp + bias) << f.man_bits) | (man >> (23 - f.man_bits));
}

double decode_bits(uint32_t bits, Format f) {
  int bias = (1 << (f.exp_bits - 1)) - 1;
  uint32_t man_mask = (1u << f.man_bits) - 1, exp_mask = (1u << f.exp_bits) - 1;
  bool negative = (bits >> (f.exp_bits + f.man_bits)) & 1;
  uint32_t exp = (bits >> f.man_bits) & exp_mask, man = bits & man_mask;
  double v;
  if (f.finite_only && exp == exp_mask && man == man_mask) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (!f.finite_only && exp == exp_mask) {
    v = man ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (exp == 0) {
    v = std::ldexp(double(man), 1 - bias - f.man_bits);
  } else {
    v = std::ldexp(double(man | (1u << f.man_bits)), int(exp) - bias - f.man_bits);
  }
  return negative ? -v : v;
}

}  // namespace

void encode_element(DType dtype, float value, unsigned char* dst) {
  if (dtype == DType::fp32) {
    std::memcpy(dst, &value, 4);
    return;
  }
  uint32_t bits = encode_bits(value, format_of(dtype));
  std::memcpy(dst, &bits, size_of(dtype));  // little-endian: the low bytes hold the element
}

double decode_element(DType dtype, const unsigned char* src) {
  if (dtype == DType::fp32) {
    float v;
    std::memcpy(&v, src, 4);
    return v;
  }
  uint32_t bits = 0;
  std::memcpy(&bits, src, size_of(dtype));
  return decode_bits(bits, format_of(dtype));
}

void fill_random(DType dtype, std::span<unsigned char> bytes, uint64_t seed) {
  SplitMix64 rng(seed);
  const size_t width = size_of(dtype);
  for (size_t i = 0; i + width <= bytes.size(); i += width)
    encode_element(dtype, float(int(rng.next() % 17) - 8) / 8.0f, bytes.data() + i);
}

}  // namespace gemmops::cli
