// tests/unit/test_quantize.cpp: quantize_fp8 (bf16/fp32 -> e4m3 + fp32 scales): round trip within
// e4m3's half step, scales exactly amax / 448, every layout, and the errors
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "cpu/convert.hpp"
#include "cpu/cpu_operator.hpp"
#include "fp8/quantize_kernels.hpp"
#include "gemmops/scaling.hpp"

namespace gemmops {
namespace {

struct Quantized {
  std::vector<uint8_t> q;
  std::vector<float> s;
  TensorDesc q_desc;
  OperandScales scales;
};

// Scales of `shape` in `layout` (mn_major: dimension -2 contiguous, padded to 4).
OperandScales make_scales(ScaleGranularity g, ScaleLayout layout, const std::vector<int64_t>& shape,
                          std::vector<float>& storage) {
  OperandScales s;
  s.granularity = g;
  s.layout = layout;
  const size_t r = shape.size();
  if (layout == ScaleLayout::mn_major && r >= 2) {
    const int64_t ld = (shape[r - 2] + 3) / 4 * 4;
    std::vector<int64_t> strides(r);
    strides[r - 2] = 1, strides[r - 1] = ld;
    if (r == 3) strides[0] = ld * shape[2];
    storage.assign(static_cast<size_t>((r == 3 ? shape[0] : 1) * ld * shape[r - 1]), std::nanf(""));
    s.scales = TensorDesc(DType::fp32, shape, strides, Device::cpu(), storage.data());
  } else {
    s.scales = TensorDesc::contiguous(DType::fp32, shape);
    storage.assign(static_cast<size_t>(s.scales.numel()), std::nanf(""));
    s.scales.data = storage.data();
  }
  return s;
}

float scale_at(const OperandScales& s, int64_t inst, int64_t r, int64_t c) {
  std::vector<int64_t> idx;
  if (s.scales.rank() == 3 || (s.granularity == ScaleGranularity::row && s.scales.rank() == 2) ||
      (s.granularity == ScaleGranularity::tensor && s.scales.shape[0] > 1))
    idx.push_back(inst);
  switch (s.granularity) {
    case ScaleGranularity::tensor:
      if (idx.empty()) idx.push_back(0);
      break;
    case ScaleGranularity::row: idx.push_back(r); break;
    case ScaleGranularity::block_1x128: idx.push_back(r), idx.push_back(c / 128); break;
    case ScaleGranularity::block_128x128: idx.push_back(r / 128), idx.push_back(c / 128); break;
  }
  int64_t off = 0;
  for (size_t i = 0; i < idx.size(); ++i) off += idx[i] * s.scales.strides[i];
  return static_cast<const float*>(s.scales.data)[off];
}

// x (L, R, C) with magnitudes spread over many binades, rows of zeros and one tiny row.
std::vector<float> make_x(int64_t l, int64_t r, int64_t c, std::mt19937& rng) {
  std::vector<float> x(static_cast<size_t>(l * r * c));
  std::normal_distribution<float> v(0.0f, 1.0f);
  std::uniform_int_distribution<int> e(-12, 12);
  for (int64_t i = 0; i < l * r; ++i) {
    const float row_scale = std::ldexp(1.0f, e(rng));
    for (int64_t j = 0; j < c; ++j) {
      float value = v(rng) * row_scale * (j % 7 == 0 ? 1e-3f : 1.0f);
      if (i % r == 3) value = 0.0f;        // an all-zero row
      if (i % r == 5) value *= 1e-6f;      // a tiny row
      x[static_cast<size_t>(i * c + j)] = value;
    }
  }
  return x;
}

constexpr ScaleGranularity kAll[] = {ScaleGranularity::tensor, ScaleGranularity::row, ScaleGranularity::block_1x128,
                                     ScaleGranularity::block_128x128};

// Round trip: scale == max(amax, 1e-4) / 448 exactly, |q * scale - x| <= half an e4m3 step.
void expect_round_trip(int64_t l, int64_t r, int64_t c, DType x_type, ScaleGranularity g, ScaleLayout layout,
                       std::mt19937& rng) {
  std::vector<float> xf = make_x(l > 0 ? l : 1, r, c, rng);
  std::vector<uint16_t> xb(xf.size());
  for (size_t i = 0; i < xf.size(); ++i) {
    xb[i] = cpu::float_to_bf16(xf[i]);
    if (x_type == DType::bf16) xf[i] = cpu::bf16_to_float(xb[i]);
  }
  const bool stacked = l > 0;
  std::vector<int64_t> shape = stacked ? std::vector<int64_t>{l, r, c} : std::vector<int64_t>{r, c};
  const TensorDesc x = TensorDesc::contiguous(x_type, shape, Device::cpu(),
                                              x_type == DType::bf16 ? static_cast<void*>(xb.data()) : xf.data());
  std::vector<uint8_t> q(xf.size(), 0xff);
  const TensorDesc qd = TensorDesc::contiguous(DType::e4m3, shape, Device::cpu(), q.data());
  std::vector<float> storage;
  const bool block = g == ScaleGranularity::block_1x128 || g == ScaleGranularity::block_128x128;
  const OperandScales s = make_scales(g, block ? layout : ScaleLayout::k_major,
                                      scale_shape(g, stacked ? l : -1, r, c), storage);
  const Status st = quantize_fp8(x, qd, s);
  ASSERT_TRUE(st) << st.to_string();
  const int64_t L = stacked ? l : 1;
  const int64_t br = g == ScaleGranularity::tensor ? r : (g == ScaleGranularity::block_128x128 ? 128 : 1);
  const int64_t bc = g == ScaleGranularity::block_1x128 || g == ScaleGranularity::block_128x128 ? 128 : c;
  std::map<std::tuple<int64_t, int64_t, int64_t>, float> amax_of;  // per block, computed here
  for (int64_t i = 0; i < L; ++i)
    for (int64_t rr = 0; rr < r; ++rr)
      for (int64_t cc = 0; cc < c; ++cc) {
        // amax of the block, computed here.
        const int64_t r0 = rr / br * br, c0 = cc / bc * bc;
        auto [it, fresh] = amax_of.try_emplace({i, r0, c0}, 0.0f);
        if (fresh)
          for (int64_t a = r0; a < std::min(r, r0 + br); ++a)
            for (int64_t b = c0; b < std::min(c, c0 + bc); ++b)
              it->second = std::max(it->second, std::fabs(xf[static_cast<size_t>((i * r + a) * c + b)]));
        const float amax = it->second;
        const float want_scale = std::max(amax, 1e-4f) / 448.0f;
        const float scale = scale_at(s, i, rr, cc);
        ASSERT_EQ(scale, want_scale) << name(g) << " at " << i << "," << rr << "," << cc;
        const size_t e = static_cast<size_t>((i * r + rr) * c + cc);
        const double x_value = xf[e];
        const double back = double(cpu::e4m3_to_float(q[e])) * scale;
        // Half an e4m3 step: 2^-4 relative for normals, 2^-10 * scale below 2^-6 * scale (subnormals),
        // and a hair for the fp32 product x * (448 / amax).
        const double bound = (std::ldexp(1.0, -4) * std::fabs(x_value) + std::ldexp(1.0, -10) * scale) * (1 + 1e-6);
        ASSERT_LE(std::fabs(back - x_value), bound) << name(g) << " x=" << x_value << " back=" << back;
        ASSERT_LE(std::fabs(cpu::e4m3_to_float(q[e])), 448.0f);
      }
}

TEST(Quantize, round_trip_is_within_half_an_e4m3_step_and_scales_are_amax_over_448) {
  std::mt19937 rng(17);
  for (ScaleGranularity g : kAll)
    for (ScaleLayout layout : {ScaleLayout::k_major, ScaleLayout::mn_major})
      for (DType t : {DType::fp32, DType::bf16}) {
        expect_round_trip(-1, 130, 300, t, g, layout, rng);  // partial blocks in both dimensions
        expect_round_trip(2, 7, 129, t, g, layout, rng);     // stacked
      }
}

TEST(Quantize, an_all_zero_block_gets_the_minimum_scale_and_zero_codes) {
  std::vector<float> x(256, 0.0f), s(2);
  std::vector<uint8_t> q(256, 0xff);
  OperandScales sc{TensorDesc::contiguous(DType::fp32, {1, 2}, Device::cpu(), s.data()),
                   ScaleGranularity::block_1x128};
  ASSERT_TRUE(quantize_fp8(TensorDesc::contiguous(DType::fp32, {1, 256}, Device::cpu(), x.data()),
                           TensorDesc::contiguous(DType::e4m3, {1, 256}, Device::cpu(), q.data()), sc));
  EXPECT_EQ(s[0], 1e-4f / 448.0f);
  EXPECT_EQ(s[1], 1e-4f / 448.0f);
  for (uint8_t c : q) EXPECT_EQ(c, 0);
}

TEST(Quantize, scales_of_empty_matrices_and_rows_are_written) {
  std::vector<float> s(3, std::nanf(""));
  std::vector<float> x(1);
  std::vector<uint8_t> q(1);
  OperandScales t{TensorDesc::contiguous(DType::fp32, {1}, Device::cpu(), s.data()), ScaleGranularity::tensor};
  ASSERT_TRUE(quantize_fp8(TensorDesc::contiguous(DType::fp32, {0, 5}, Device::cpu(), x.data()),
                           TensorDesc::contiguous(DType::e4m3, {0, 5}, Device::cpu(), q.data()), t));
  EXPECT_EQ(s[0], 1e-4f / 448.0f);
  OperandScales r{TensorDesc::contiguous(DType::fp32, {3}, Device::cpu(), s.data()), ScaleGranularity::row};
  std::fill(s.begin(), s.end(), std::nanf(""));
  ASSERT_TRUE(quantize_fp8(TensorDesc::contiguous(DType::fp32, {3, 0}, Device::cpu(), x.data()),
                           TensorDesc::contiguous(DType::e4m3, {3, 0}, Device::cpu(), q.data()), r));
  for (float v : s) EXPECT_EQ(v, 1e-4f / 448.0f);
}

// B (K, N) quantised along K through its transposed views, then used as b_scales.
TEST(Quantize, quantised_operands_feed_the_scaled_gemm) {
  std::mt19937 rng(23);
  const int64_t M = 33, N = 20, K = 300;
  std::vector<float> a = make_x(1, M, K, rng), b = make_x(1, K, N, rng);
  std::vector<uint8_t> qa(a.size()), qb(b.size());
  std::vector<float> sa_store, sb_store;
  const OperandScales sa = make_scales(ScaleGranularity::block_1x128, ScaleLayout::mn_major,
                                       scale_shape(ScaleGranularity::block_1x128, -1, M, K), sa_store);
  const OperandScales sb = make_scales(ScaleGranularity::block_128x128, ScaleLayout::k_major,
                                       scale_shape(ScaleGranularity::block_128x128, -1, N, K), sb_store);
  ASSERT_TRUE(quantize_fp8(TensorDesc::contiguous(DType::fp32, {M, K}, Device::cpu(), a.data()),
                           TensorDesc::contiguous(DType::e4m3, {M, K}, Device::cpu(), qa.data()), sa));
  // B^T views: (N, K) with strides (1, N).
  ASSERT_TRUE(quantize_fp8(TensorDesc(DType::fp32, {N, K}, {1, N}, Device::cpu(), b.data()),
                           TensorDesc(DType::e4m3, {N, K}, {1, N}, Device::cpu(), qb.data()), sb));
  std::vector<float> out(static_cast<size_t>(M * N));
  GemmArguments g{TensorDesc::contiguous(DType::e4m3, {M, K}, Device::cpu(), qa.data()),
                  TensorDesc::contiguous(DType::e4m3, {K, N}, Device::cpu(), qb.data()),
                  TensorDesc::contiguous(DType::fp32, {M, N}, Device::cpu(), out.data())};
  g.a_scales = sa, g.b_scales = sb;
  ASSERT_TRUE(cpu::CpuOperator(OperationKind::gemm).run(g));
  // Against the unquantised product: each term within ~2 half steps.
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double want = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        want += double(a[static_cast<size_t>(i * K + k)]) * b[static_cast<size_t>(k * N + j)];
        mag += std::fabs(double(a[static_cast<size_t>(i * K + k)]) * b[static_cast<size_t>(k * N + j)]);
      }
      EXPECT_LE(std::fabs(out[static_cast<size_t>(i * N + j)] - want), 0.2 * mag + 1e-30) << i << "," << j;
    }
}

TEST(Quantize, bad_inputs_are_statuses_naming_the_tensor) {
  std::vector<float> x(2 * 300), s(2 * 3);
  std::vector<uint8_t> q(2 * 300);
  const TensorDesc xd = TensorDesc::contiguous(DType::fp32, {2, 300}, Device::cpu(), x.data());
  const TensorDesc qd = TensorDesc::contiguous(DType::e4m3, {2, 300}, Device::cpu(), q.data());
  OperandScales sd{TensorDesc::contiguous(DType::fp32, {2, 3}, Device::cpu(), s.data()), ScaleGranularity::block_1x128};
  EXPECT_TRUE(quantize_fp8(xd, qd, sd));
  auto msg = [](const Status& st) {
    EXPECT_EQ(st.code(), ErrorCode::invalid_argument);
    return st.message();
  };
  TensorDesc bad = xd;
  bad.dtype = DType::fp16;
  EXPECT_EQ(msg(quantize_fp8(bad, qd, sd)), "x: dtype must be one of bf16, fp32; got fp16");
  bad = qd;
  bad.dtype = DType::e5m2;
  EXPECT_EQ(msg(quantize_fp8(xd, bad, sd)), "q: dtype must be e4m3; got e5m2");
  bad = TensorDesc::contiguous(DType::e4m3, {2, 299}, Device::cpu(), q.data());
  EXPECT_EQ(msg(quantize_fp8(xd, bad, sd)), "q: shape must equal x's (2, 300); got (2, 299)");
  OperandScales wrong = sd;
  wrong.scales = TensorDesc::contiguous(DType::fp32, {2, 2}, Device::cpu(), s.data());
  EXPECT_EQ(msg(quantize_fp8(xd, qd, wrong)),
            "scales: block_1x128 scales of x (R,C) = (2, 300) must have shape (R, ceil(C/128)) = (2, 3); got (2, 2)");
  wrong = sd;
  wrong.scales.data = nullptr;
  EXPECT_EQ(msg(quantize_fp8(xd, qd, wrong)), "scales: run needs data; got a fake tensor (no data pointer)");
  bad = xd;
  bad.device = Device::cuda(0);
  EXPECT_EQ(msg(quantize_fp8(bad, qd, sd)), "q: must be on x's device (cuda:0); got cpu");
  x[301] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(msg(quantize_fp8(xd, qd, sd)), "x: must be finite; got inf at row 1, column 1");
}

// CUDA tensors are refused before any driver call (these tests never reach a device, so the
// pointers below are never dereferenced).
TEST(Quantize, cuda_tensors_on_mixed_devices_fakes_and_misaligned_data_are_refused_by_name) {
  const Device gpu = Device::cuda(0);
  auto* fake_base = reinterpret_cast<std::byte*>(uintptr_t{1} << 20);
  const TensorDesc x = TensorDesc::contiguous(DType::bf16, {4, 300}, gpu, fake_base);
  const TensorDesc q = TensorDesc::contiguous(DType::e4m3, {4, 300}, gpu, fake_base + 4096);
  OperandScales s{TensorDesc::contiguous(DType::fp32, {4, 3}, gpu, fake_base + 8192), ScaleGranularity::block_1x128};
  auto msg = [](const Status& st) {
    EXPECT_EQ(st.code(), ErrorCode::invalid_argument);
    return st.message();
  };
  TensorDesc bad = q;
  bad.device = Device::cpu();
  EXPECT_EQ(msg(quantize_fp8(x, bad, s)), "q: must be on x's device (cuda:0); got cpu");
  OperandScales other = s;
  other.scales.device = Device::cuda(1);
  EXPECT_EQ(msg(quantize_fp8(x, q, other)), "scales: must be on x's device (cuda:0); got cuda:1");
  bad = x;
  bad.data = nullptr;
  EXPECT_EQ(msg(quantize_fp8(bad, q, s)), "x: run needs data; got a fake tensor (no data pointer)");
  bad = q;
  bad.data = nullptr;
  EXPECT_EQ(msg(quantize_fp8(x, bad, s)), "q: run needs data; got a fake tensor (no data pointer)");
  other = s;
  other.scales.data = nullptr;
  EXPECT_EQ(msg(quantize_fp8(x, q, other)), "scales: run needs data; got a fake tensor (no data pointer)");
  bad = x;
  bad.data = fake_base + 1;
  EXPECT_EQ(msg(quantize_fp8(bad, q, s)),
            "x: on a CUDA device its data must be aligned to its element size (2 bytes); got " + bad.describe());
  other = s;
  other.scales.data = fake_base + 8194;
  EXPECT_EQ(msg(quantize_fp8(x, q, other)),
            "scales: on a CUDA device its data must be aligned to its element size (4 bytes); got " +
                other.scales.describe());
  // Shape rules come first, whatever the device.
  bad = TensorDesc::contiguous(DType::e4m3, {4, 299}, gpu, fake_base + 4096);
  EXPECT_EQ(msg(quantize_fp8(x, bad, s)), "q: shape must equal x's (4, 300); got (4, 299)");
  // Tensors without elements need no data.
  const TensorDesc empty_x = TensorDesc::contiguous(DType::bf16, {0, 300}, gpu);
  const TensorDesc empty_q = TensorDesc::contiguous(DType::e4m3, {0, 300}, gpu);
  OperandScales empty_s{TensorDesc::contiguous(DType::fp32, {0, 3}, gpu), ScaleGranularity::block_1x128};
  EXPECT_NE(quantize_fp8(empty_x, empty_q, empty_s).code(), ErrorCode::invalid_argument);
}

TEST(Quantize, the_device_reads_16_bytes_a_load_where_both_layouts_allow) {
  auto* base = reinterpret_cast<std::byte*>(uintptr_t{1} << 20);
  auto t = [&](DType d, std::vector<int64_t> shape, std::vector<int64_t> strides, int64_t offset = 0) {
    return TensorDesc(d, std::move(shape), std::move(strides), Device::cuda(0), base + offset);
  };
  const TensorDesc q = t(DType::e4m3, {4, 256}, {256, 1});
  EXPECT_EQ(fp8::quantize_vector_width(t(DType::bf16, {4, 256}, {256, 1}), q), 8);
  EXPECT_EQ(fp8::quantize_vector_width(t(DType::fp32, {4, 256}, {256, 1}), q), 4);
  // C = 300: rows 600 bytes apart, 8-byte aligned: 4 bf16 a load; C = 130: 2; C = 129: 1.
  EXPECT_EQ(fp8::quantize_vector_width(t(DType::bf16, {4, 300}, {300, 1}), t(DType::e4m3, {4, 300}, {300, 1})), 4);
  EXPECT_EQ(fp8::quantize_vector_width(t(DType::bf16, {4, 130}, {130, 1}), t(DType::e4m3, {4, 130}, {130, 1})), 2);
  EXPECT_EQ(fp8::quantize_vector_width(t(DType::bf16, {4, 129}, {129, 1}), t(DType::e4m3, {4, 129}, {129, 1})), 1);
  // Padded rows: C decides. A transposed x (B^T): one element. q one byte off: one element.
  EXPECT_EQ(fp8::quantize_vector_width(t(DType::bf16, {4, 256}, {264, 1}), q), 8);
  EXPECT_EQ(fp8::quantize_vector_width(t(DType::bf16, {4, 256}, {1, 4}), q), 1);
  EXPECT_EQ(fp8::quantize_vector_width(t(DType::bf16, {4, 256}, {256, 1}), t(DType::e4m3, {4, 256}, {256, 1}, 1)), 1);
  EXPECT_EQ(fp8::quantize_vector_width(t(DType::bf16, {4, 256}, {256, 1}), t(DType::e4m3, {4, 256}, {256, 1}, 4)), 4);
  // Stacked: the instance stride counts too (unless there is one instance).
  EXPECT_EQ(fp8::quantize_vector_width(t(DType::bf16, {2, 4, 256}, {1028, 256, 1}),
                                       t(DType::e4m3, {2, 4, 256}, {1024, 256, 1})), 4);
  EXPECT_EQ(fp8::quantize_vector_width(t(DType::bf16, {1, 4, 256}, {1028, 256, 1}),
                                       t(DType::e4m3, {1, 4, 256}, {1024, 256, 1})), 8);
}

}  // namespace
}  // namespace gemmops
