// src/cpu/pack.cpp: conversion to float happens here, once per element per block, not in the kernel
// SPDX-License-Identifier: Apache-2.0
#include "cpu/pack.hpp"

#include <cstdlib>
#include <cstring>

#include "cpu/convert.hpp"
#include "cpu/microkernel.hpp"

namespace gemmops::cpu {
namespace {

template <DType kT>
struct Element;
template <>
struct Element<DType::fp32> {
  static float load(const std::byte* p) { float v; std::memcpy(&v, p, 4); return v; }
  static void store(std::byte* p, float v) { std::memcpy(p, &v, 4); }
};
template <>
struct Element<DType::bf16> {
  static float load(const std::byte* p) { uint16_t v; std::memcpy(&v, p, 2); return bf16_to_float(v); }
  static void store(std::byte* p, float v) { uint16_t h = float_to_bf16(v); std::memcpy(p, &h, 2); }
};
template <>
struct Element<DType::fp16> {
  static float load(const std::byte* p) { uint16_t v; std::memcpy(&v, p, 2); return fp16_to_float(v); }
  static void store(std::byte* p, float v) { uint16_t h = float_to_fp16(v); std::memcpy(p, &h, 2); }
};
template <>
struct Element<DType::e4m3> {
  static float load(const std::byte* p) { return e4m3_to_float(static_cast<uint8_t>(*p)); }
};
template <>
struct Element<DType::e5m2> {
  static float load(const std::byte* p) { return e5m2_to_float(static_cast<uint8_t>(*p)); }
};

// `count` rows of the panel dimension (stride sx) by kc steps of k (stride sk), in panels of P.
// The loop order follows the smaller stride so that reads walk memory forward.
template <DType kT, int P>
void pack_panels(const std::byte* base, int64_t sx, int64_t sk, int64_t count, int64_t kc, float* dst) {
  constexpr int64_t kSize = static_cast<int64_t>(size_of(kT));
  const int64_t panels = (count + P - 1) / P;
  for (int64_t p = 0; p < panels; ++p) {
    float* out = dst + p * kc * P;
    const int64_t rows = count - p * P < P ? count - p * P : P;
    if (rows < P) std::memset(out, 0, sizeof(float) * static_cast<size_t>(kc * P));
    if (std::llabs(sk) <= std::llabs(sx)) {
      for (int64_t i = 0; i < rows; ++i) {
        const std::byte* src = base + (p * P + i) * sx * kSize;
        for (int64_t k = 0; k < kc; ++k) out[k * P + i] = Element<kT>::load(src + k * sk * kSize);
      }
    } else {
      for (int64_t k = 0; k < kc; ++k) {
        const std::byte* src = base + (p * P * sx + k * sk) * kSize;
        for (int64_t i = 0; i < rows; ++i) out[k * P + i] = Element<kT>::load(src + i * sx * kSize);
      }
    }
  }
}

template <int P>
void pack_any(const MatrixRef& m, int64_t offset, int64_t sx, int64_t sk, int64_t count, int64_t kc,
              float* dst) {
  const std::byte* base = m.data + offset * static_cast<int64_t>(size_of(m.dtype));
  switch (m.dtype) {
    case DType::fp32: return pack_panels<DType::fp32, P>(base, sx, sk, count, kc, dst);
    case DType::bf16: return pack_panels<DType::bf16, P>(base, sx, sk, count, kc, dst);
    case DType::fp16: return pack_panels<DType::fp16, P>(base, sx, sk, count, kc, dst);
    case DType::e4m3: return pack_panels<DType::e4m3, P>(base, sx, sk, count, kc, dst);
    case DType::e5m2: return pack_panels<DType::e5m2, P>(base, sx, sk, count, kc, dst);
    case DType::i32: break;  // refused by the operator's metadata
  }
}

template <DType kT>
void store_as(const float* c, int64_t ldc, const OutRef& out, int64_t m0, int64_t mc, int64_t n0,
              int64_t nc) {
  constexpr int64_t kSize = static_cast<int64_t>(size_of(kT));
  for (int64_t i = 0; i < mc; ++i) {
    std::byte* row = out.data + ((m0 + i) * out.row_stride + n0 * out.col_stride) * kSize;
    for (int64_t j = 0; j < nc; ++j) Element<kT>::store(row + j * out.col_stride * kSize, c[i * ldc + j]);
  }
}

}  // namespace

void pack_a(const MatrixRef& a, int64_t m0, int64_t mc, int64_t k0, int64_t kc, float* dst) {
  pack_any<kMr>(a, m0 * a.row_stride + k0 * a.col_stride, a.row_stride, a.col_stride, mc, kc, dst);
}

void pack_b(const MatrixRef& b, int64_t k0, int64_t kc, int64_t n0, int64_t nc, float* dst) {
  pack_any<kNr>(b, k0 * b.row_stride + n0 * b.col_stride, b.col_stride, b.row_stride, nc, kc, dst);
}

void store_tile(const float* c, int64_t ldc, const OutRef& out, int64_t m0, int64_t mc, int64_t n0,
                int64_t nc) {
  switch (out.dtype) {
    case DType::fp32: return store_as<DType::fp32>(c, ldc, out, m0, mc, n0, nc);
    case DType::bf16: return store_as<DType::bf16>(c, ldc, out, m0, mc, n0, nc);
    case DType::fp16: return store_as<DType::fp16>(c, ldc, out, m0, mc, n0, nc);
    default: break;  // out dtypes are bf16, fp16 and fp32 by the operator's metadata
  }
}

}  // namespace gemmops::cpu
