// src/cpu/convert.hpp: bit-exact conversions between float and bf16, fp16, e4m3 (fn) and e5m2
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace gemmops::cpu {

// Every float -> narrow conversion rounds to nearest, ties to even, and keeps NaN a NaN (quiet,
// sign kept). Overflow follows torch and ml_dtypes: infinity for bf16, fp16 and e5m2; NaN for
// e4m3fn, which has no infinity (so e.g. 464 -> 448 by the tie rule, 465 -> NaN, inf -> NaN).

inline float bf16_to_float(uint16_t h) { return std::bit_cast<float>(uint32_t{h} << 16); }

inline uint16_t float_to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);  // overflow carries into the exponent: inf, as it should
  return static_cast<uint16_t>(u >> 16);
}

// Branch-light IEEE half -> float (the FP16 library's method, which torch uses): exact for
// normals, subnormals, infinities and NaN payloads.
inline float fp16_to_float(uint16_t h) {
  const uint32_t w = uint32_t{h} << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;
  const float normalized = std::bit_cast<float>((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
  const float denormalized = std::bit_cast<float>((two_w >> 17) | (126u << 23)) - 0.5f;
  const uint32_t r = two_w < (1u << 27) ? std::bit_cast<uint32_t>(denormalized)
                                        : std::bit_cast<uint32_t>(normalized);
  return std::bit_cast<float>(sign | r);
}

namespace detail {

/// A binary format with `kExp` exponent and `kMant` mantissa bits. `kFn` formats (e4m3fn) have no
/// infinity: the all-ones exponent holds normal numbers except the all-ones mantissa, which is NaN.
template <int kExp, int kMantBits, bool kFnFormat>
struct NarrowFormat {
  static constexpr int kMant = kMantBits;
  static constexpr bool kFn = kFnFormat;
  static constexpr int kBias = (1 << (kExp - 1)) - 1;
  static constexpr uint32_t kSign = 1u << (kExp + kMant);
  static constexpr uint32_t kExpOnes = (1u << kExp) - 1;
  static constexpr uint32_t kInf = kExpOnes << kMant;                  // unused when kFn
  // The NaN we produce: all-ones mantissa for fp8 (torch's 0x7f), the quiet bit for fp16 (0x7e00).
  static constexpr uint32_t kNaN = kMantBits <= 3 ? (kInf | ((1u << kMant) - 1)) : (kInf | (1u << (kMant - 1)));
  static constexpr uint32_t kMaxFinite = kFn ? kNaN - 1 : kInf - 1;
};

template <class F>
constexpr uint32_t narrow_from_float(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (u >> 31) ? F::kSign : 0u;
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | F::kNaN;
  if (a == 0x7f800000u) return sign | (F::kFn ? F::kNaN : F::kInf);
  // |f| = s * 2^(e - 23) with s the full significand (float subnormals: e = -126, no hidden bit).
  const int biased = static_cast<int>(a >> 23);
  const int e = biased == 0 ? -126 : biased - 127;
  const uint64_t s = biased == 0 ? (a & 0x7fffffu) : ((a & 0x7fffffu) | 0x800000u);
  // Round to a multiple of the target's quantum 2^(e_eff - kMant) (subnormals share e_eff = 1-bias).
  const int e_eff = e > 1 - F::kBias ? e : 1 - F::kBias;
  const int shift = 23 + e_eff - F::kMant - e;  // >= 23 - kMant > 0
  uint64_t n = 0;
  if (shift < 40) {
    n = s >> shift;
    const uint64_t rem = s & ((uint64_t{1} << shift) - 1);
    const uint64_t half = uint64_t{1} << (shift - 1);
    if (rem > half || (rem == half && (n & 1u))) ++n;
  }
  // n in [2^kMant, 2^(kMant+1)] for normals (a carry lands in the next binade by itself), in
  // [0, 2^kMant] for subnormals, so one formula encodes both.
  const uint64_t code = (static_cast<uint64_t>(e_eff + F::kBias - 1) << F::kMant) + n;
  if (code > F::kMaxFinite) return sign | (F::kFn ? F::kNaN : F::kInf);
  return sign | static_cast<uint32_t>(code);
}

template <class F>
constexpr float narrow_to_float(uint32_t code) {
  const bool negative = (code & F::kSign) != 0;
  const uint32_t e = (code >> F::kMant) & F::kExpOnes;
  const uint32_t m = code & ((1u << F::kMant) - 1);
  float v = 0.0f;
  if (e == F::kExpOnes && (!F::kFn || m == (1u << F::kMant) - 1)) {
    v = (m == 0 && !F::kFn) ? std::bit_cast<float>(0x7f800000u) : std::bit_cast<float>(0x7fc00000u);
  } else {
    // value = significand * 2^(e_eff - bias - kMant), built exactly as a float exponent.
    const int e_eff = e == 0 ? 1 : static_cast<int>(e);
    const uint32_t significand = e == 0 ? m : (m | (1u << F::kMant));
    const int p = e_eff - F::kBias - F::kMant;  // within float's normal range for all formats here
    v = static_cast<float>(significand) * std::bit_cast<float>(static_cast<uint32_t>(p + 127) << 23);
  }
  return negative ? -v : v;
}

using Fp16Format = NarrowFormat<5, 10, false>;
using E4m3Format = NarrowFormat<4, 3, true>;
using E5m2Format = NarrowFormat<5, 2, false>;

template <class F>
constexpr std::array<float, 256> make_fp8_table() {
  std::array<float, 256> t{};
  for (uint32_t c = 0; c < 256; ++c) t[c] = narrow_to_float<F>(c);
  return t;
}

inline constexpr std::array<float, 256> kE4m3Table = make_fp8_table<E4m3Format>();
inline constexpr std::array<float, 256> kE5m2Table = make_fp8_table<E5m2Format>();

}  // namespace detail

inline uint16_t float_to_fp16(float f) {
  return static_cast<uint16_t>(detail::narrow_from_float<detail::Fp16Format>(f));
}
inline float e4m3_to_float(uint8_t c) { return detail::kE4m3Table[c]; }
inline float e5m2_to_float(uint8_t c) { return detail::kE5m2Table[c]; }
inline uint8_t float_to_e4m3(float f) {
  return static_cast<uint8_t>(detail::narrow_from_float<detail::E4m3Format>(f));
}
inline uint8_t float_to_e5m2(float f) {
  return static_cast<uint8_t>(detail::narrow_from_float<detail::E5m2Format>(f));
}

}  // namespace gemmops::cpu
