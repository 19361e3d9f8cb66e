// tests/support/quantize_problem.hpp: quantize_fp8 problems on the host (ragged shapes, padded,
// transposed and offset layouts, magnitudes over many binades, e4m3 ties, non-finite values) and
// what a CUDA device must write for them: the host's q and scales bit for bit, except that a block
// holding a non-finite x gets a NaN scale and NaN codes (the device's policy, scaling.hpp)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/scale_geometry.hpp"
#include "cpu/convert.hpp"
#include "gemmops/scaling.hpp"
#include "support/host_tensor.hpp"

namespace gemmops::testing {

enum class XLayout {
  contiguous,  // row-major
  padded,      // rows (and instances) padded to a multiple of 8 elements past C, + 8
  transposed,  // x = B^T: rows contiguous (strides (R*C, 1, R)), read one element at a time
};

struct QuantizeSpec {
  DType in = DType::bf16;
  ScaleGranularity granularity = ScaleGranularity::block_1x128;
  ScaleLayout layout = ScaleLayout::k_major;  // block scales only
  int64_t instances = -1;                     // >= 0: x is (L, R, C)
  int64_t rows = 130, cols = 300;
  XLayout x_layout = XLayout::contiguous;
  bool q_like_x = true;     // false: q row-major whatever x is
  int64_t q_offset = 0;     // bytes q starts past its buffer's start (1: no vector store fits)
  int non_finite = 0;       // NaN, +inf, -inf, -NaN at random elements
  bool ties = false;        // fp32: 448 every 128 columns, the rest at and around e4m3's midpoints
  uint32_t seed = 1;

  std::string label() const {
    return std::string(name(in)) + " " + std::string(name(granularity)) + " " + std::string(name(layout)) + " L=" +
           std::to_string(instances) + " R=" + std::to_string(rows) + " C=" + std::to_string(cols) + " x_layout=" +
           std::to_string(static_cast<int>(x_layout)) + (q_like_x ? "" : " q row-major") + " q_offset=" +
           std::to_string(q_offset) + " non_finite=" + std::to_string(non_finite) + " seed=" + std::to_string(seed);
  }
};

/// A tensor placed `offset` bytes into its own storage (poison around it); data stays null until bound.
struct PlacedTensor {
  TensorDesc desc;
  std::vector<std::byte> storage;
  int64_t offset = 0;

  static PlacedTensor make(DType t, std::vector<int64_t> shape, std::vector<int64_t> strides, int64_t offset = 0) {
    PlacedTensor p;
    p.desc = TensorDesc(t, std::move(shape), std::move(strides), Device::cpu());
    p.offset = offset;
    p.storage.assign(static_cast<size_t>(offset + p.desc.span_bytes()) + size_of(t), std::byte{0xff});
    return p;
  }
  /// desc pointing into `base` (this storage, or a device copy of it) on `device`.
  TensorDesc bound(void* base, Device device = Device::cpu()) const {
    TensorDesc d = desc;
    d.device = device;
    d.data = static_cast<std::byte*>(base) + offset;
    return d;
  }
  TensorDesc host() { return bound(storage.data()); }
  std::byte* element(int64_t linear) {
    return storage.data() + offset + element_offset(desc, linear) * static_cast<int64_t>(size_of(desc.dtype));
  }
};

/// Strides of `shape` with its last two dimensions swapped in memory.
inline std::vector<int64_t> transposed_strides(const std::vector<int64_t>& shape) {
  const size_t r = shape.size();
  std::vector<int64_t> s(r);
  s[r - 2] = 1, s[r - 1] = std::max<int64_t>(shape[r - 2], 1);
  if (r == 3) s[0] = s[r - 1] * std::max<int64_t>(shape[r - 1], 1);
  return s;
}

inline std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape, int64_t row_stride) {
  const size_t r = shape.size();
  std::vector<int64_t> s(r);
  s[r - 1] = 1, s[r - 2] = row_stride;
  if (r == 3) s[0] = row_stride * std::max<int64_t>(shape[r - 2], 1);
  return s;
}

/// Every e4m3 value, the midpoints between neighbours and the floats either side of them, both
/// signs, and the edges of the subnormal range: the values whose codes the rounding decides.
inline std::vector<float> e4m3_rounding_cases() {
  std::vector<float> v = {0.0f, -0.0f, 0x1p-10f, std::nextafter(0x1p-10f, 1.0f), 3 * 0x1p-11f, 1e-30f, 0x1p-126f};
  for (uint32_t code = 0; code < 0x7e; ++code) {
    const float a = cpu::e4m3_to_float(static_cast<uint8_t>(code));
    const float b = cpu::e4m3_to_float(static_cast<uint8_t>(code + 1));
    const float mid = (a + b) / 2;  // exact: both are short fractions
    for (float f : {a, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 448.0f)}) v.push_back(f);
  }
  v.push_back(448.0f);
  const size_t n = v.size();
  for (size_t i = 0; i < n; ++i) v.push_back(-v[i]);
  return v;
}

struct QuantizeProblem {
  QuantizeSpec spec;
  PlacedTensor x, q, s;
  OperandScales scales;  // granularity and layout; scales.scales is s.desc

  int64_t instances() const { return spec.instances >= 0 ? spec.instances : 1; }

  static QuantizeProblem make(const QuantizeSpec& sp) {
    QuantizeProblem p;
    p.spec = sp;
    const bool stacked = sp.instances >= 0;
    std::vector<int64_t> shape = stacked ? std::vector<int64_t>{sp.instances, sp.rows, sp.cols}
                                         : std::vector<int64_t>{sp.rows, sp.cols};
    const int64_t padded = (sp.cols + 7) / 8 * 8 + 8;
    const std::vector<int64_t> xs = sp.x_layout == XLayout::transposed ? transposed_strides(shape)
                                    : sp.x_layout == XLayout::padded   ? row_major_strides(shape, padded)
                                                                       : row_major_strides(shape, sp.cols);
    p.x = PlacedTensor::make(sp.in, shape, xs);
    p.q = PlacedTensor::make(DType::e4m3, shape, sp.q_like_x ? xs : row_major_strides(shape, sp.cols), sp.q_offset);
    // Scales: k_major row-major; mn_major as DeepGEMM's TMA-aligned tensor (X contiguous, ld = X up to 4).
    std::vector<int64_t> ss = scale_shape(sp.granularity, sp.instances, sp.rows, sp.cols);
    const bool block =
        sp.granularity == ScaleGranularity::block_1x128 || sp.granularity == ScaleGranularity::block_128x128;
    std::vector<int64_t> st;
    if (block && sp.layout == ScaleLayout::mn_major) {
      const size_t r = ss.size();
      const int64_t ld = (ss[r - 2] + 3) / 4 * 4;
      st.assign(r, 0);
      st[r - 2] = 1, st[r - 1] = ld;
      if (r == 3) st[0] = ld * std::max<int64_t>(ss[2], 1);
    } else {
      st.assign(ss.size(), 1);
      for (size_t i = ss.size() - 1; i-- > 0;) st[i] = st[i + 1] * std::max<int64_t>(ss[i + 1], 1);
    }
    p.s = PlacedTensor::make(DType::fp32, ss, st);
    p.scales.granularity = sp.granularity;
    p.scales.layout = block ? sp.layout : ScaleLayout::k_major;
    p.fill();
    return p;
  }

  /// The scales descriptor bound to `base` on `device`.
  OperandScales scales_at(void* base, Device device = Device::cpu()) const {
    OperandScales o = scales;
    o.scales = s.bound(base, device);
    return o;
  }

  /// q and the scales a device must leave (from the poisoned storages): the host's result on x with
  /// its non-finite values zeroed, then NaN scale and codes for every block that held one.
  std::pair<std::vector<std::byte>, std::vector<std::byte>> expected_on_device() const {
    QuantizeProblem clean = *this;
    std::vector<int64_t> bad;
    for (int64_t i = 0; i < x.desc.numel(); ++i) {
      if (!std::isfinite(load_element(x.desc.dtype, clean.x.element(i)))) {
        bad.push_back(i);
        store_element(x.desc.dtype, clean.x.element(i), 0.0);
      }
    }
    const Status st = quantize_fp8(clean.x.host(), clean.q.host(), clean.scales_at(clean.s.storage.data()));
    EXPECT_TRUE(st) << st.to_string();
    const int64_t R = spec.rows, C = spec.cols;
    for (int64_t linear : bad) {
      const int64_t inst = linear / std::max<int64_t>(R * C, 1), r = linear / C % R, c = linear % C;
      int64_t r0 = 0, r1 = R, c0 = 0, c1 = C;
      switch (spec.granularity) {
        case ScaleGranularity::tensor: break;
        case ScaleGranularity::row: r0 = r, r1 = r + 1; break;
        case ScaleGranularity::block_1x128: r0 = r, r1 = r + 1, c0 = c / 128 * 128, c1 = std::min(C, c0 + 128); break;
        case ScaleGranularity::block_128x128:
          r0 = r / 128 * 128, r1 = std::min(R, r0 + 128), c0 = c / 128 * 128, c1 = std::min(C, c0 + 128);
          break;
      }
      const uint32_t nan_bits = 0x7fc00000u;
      const int64_t so = detail::scale_offset(scales_at(nullptr), spec.instances >= 0, inst, r, c);
      std::memcpy(clean.s.storage.data() + clean.s.offset + so * 4, &nan_bits, 4);
      for (int64_t rr = r0; rr < r1; ++rr)
        for (int64_t cc = c0; cc < c1; ++cc) *clean.q.element((inst * R + rr) * C + cc) = std::byte{0x7f};
    }
    return {clean.q.storage, clean.s.storage};
  }

 private:
  void fill() {
    std::mt19937 rng(spec.seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_int_distribution<int> binade(-12, 12);
    const int64_t R = spec.rows, C = spec.cols;
    const std::vector<float> ties = spec.ties ? e4m3_rounding_cases() : std::vector<float>{};
    size_t next_tie = 0;
    for (int64_t row = 0; row < instances() * R; ++row) {
      const float row_scale = std::ldexp(1.0f, binade(rng));
      for (int64_t c = 0; c < C; ++c) {
        float v = normal(rng) * row_scale * (c % 7 == 0 ? 1e-3f : 1.0f);
        if (row % R == 3) v = 0.0f;   // an all-zero row
        if (row % R == 5) v *= 1e-6f; // a tiny row: subnormal codes, products that round to zero
        if (spec.ties) v = c % 128 == 0 ? 448.0f : ties[next_tie++ % ties.size()];
        store_element(spec.in, x.element(row * C + c), v);
      }
    }
    const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::quiet_NaN()};
    std::uniform_int_distribution<int64_t> at(0, std::max<int64_t>(x.desc.numel() - 1, 0));
    for (int i = 0; i < spec.non_finite && x.desc.numel() > 0; ++i) {
      float f = specials[i % 4];
      auto* e = x.element(at(rng));
      if (spec.in == DType::fp32) {
        std::memcpy(e, &f, 4);
      } else {
        const uint16_t h = cpu::float_to_bf16(f);
        std::memcpy(e, &h, 2);
      }
    }
  }
};

}  // namespace gemmops::testing
