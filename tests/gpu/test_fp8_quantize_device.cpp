// tests/gpu/test_fp8_quantize_device.cpp: quantize_fp8() on a CUDA device writes the host's q and
// scales bit for bit (every granularity, both scale layouts, bf16 and fp32, stacked, ragged R and C,
// padded, transposed and misaligned layouts that take each vector width, e4m3 ties), NaN scale and
// codes for blocks holding a non-finite x, untouched bytes around every tensor, and two runs agree
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "gemmops/device.hpp"
#include "gemmops/scaling.hpp"
#include "support/device_problem.hpp"
#include "support/quantize_problem.hpp"

namespace gemmops::testing {
namespace {

using Bytes = std::vector<std::byte>;

Result<DeviceBuffer> upload_bytes(const Bytes& b) {
  GEMMOPS_ASSIGN_OR_RETURN(DeviceBuffer d, DeviceBuffer::allocate(b.size()));
  GEMMOPS_TRY(d.copy_from_host(b.data(), b.size()));
  return d;
}

/// q's and the scales' whole storages (poison around the tensors included) after a device run.
std::pair<Bytes, Bytes> run_on_device(const QuantizeProblem& p) {
  Bytes q = p.q.storage, s = p.s.storage;
  auto x_dev = upload_bytes(p.x.storage), q_dev = upload_bytes(q), s_dev = upload_bytes(s);
  EXPECT_TRUE(x_dev && q_dev && s_dev);
  if (!(x_dev && q_dev && s_dev)) return {q, s};
  const Device dev = Device::cuda(0);
  const Status st = quantize_fp8(p.x.bound(x_dev->data(), dev), p.q.bound(q_dev->data(), dev),
                                 p.scales_at(s_dev->data(), dev));
  EXPECT_TRUE(st) << p.spec.label() << ": " << st.to_string();
  EXPECT_TRUE(synchronize());
  EXPECT_TRUE(q_dev->copy_to_host(q.data(), q.size()));
  EXPECT_TRUE(s_dev->copy_to_host(s.data(), s.size()));
  return {q, s};
}

/// The first differing byte, or "" when equal.
std::string first_difference(const Bytes& got, const Bytes& want) {
  if (got.size() != want.size()) return "sizes differ";
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      char text[64];
      std::snprintf(text, sizeof text, "byte %zu: got 0x%02x, want 0x%02x", i, static_cast<unsigned>(got[i]),
                    static_cast<unsigned>(want[i]));
      return text;
    }
  }
  return "";
}

void expect_device_equals_expected(const QuantizeSpec& spec) {
  const QuantizeProblem p = QuantizeProblem::make(spec);
  const auto [want_q, want_s] = p.expected_on_device();
  const auto [got_q, got_s] = run_on_device(p);
  EXPECT_EQ(first_difference(got_q, want_q), "") << "q of " << spec.label();
  EXPECT_EQ(first_difference(got_s, want_s), "") << "scales of " << spec.label();
}

struct Shape {
  int64_t instances, rows, cols;
};

// Ragged R and C (partial blocks both ways), C of each vector width (300: 4 bf16, 130: 2, 129: 1),
// stacked forms, a single element.
constexpr Shape kShapes[] = {{-1, 130, 300}, {-1, 1, 1}, {-1, 257, 129}, {-1, 64, 256}, {-1, 5, 130},
                             {-1, 3, 8},     {2, 70, 200}, {3, 129, 136}};

TEST(QuantizeDevice, equals_the_host_bit_for_bit) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  uint32_t seed = 1;
  for (DType in : {DType::bf16, DType::fp32})
    for (ScaleGranularity g : kAllScaleGranularities)
      for (ScaleLayout layout : kAllScaleLayouts) {
        const bool block = g == ScaleGranularity::block_1x128 || g == ScaleGranularity::block_128x128;
        if (!block && layout == ScaleLayout::mn_major) continue;  // tensor and row scales take k_major only
        for (const Shape& sh : kShapes) {
          QuantizeSpec s;
          s.in = in, s.granularity = g, s.layout = layout;
          s.instances = sh.instances, s.rows = sh.rows, s.cols = sh.cols;
          for (XLayout xl : {XLayout::contiguous, XLayout::padded, XLayout::transposed}) {
            s.x_layout = xl, s.q_like_x = true, s.q_offset = 0, s.seed = seed++;
            expect_device_equals_expected(s);
          }
          // x's vectors with q's narrower ones (q 2 bytes in: 2-element stores at most; 1: single bytes),
          // and a transposed x with a row-major q.
          s.x_layout = XLayout::contiguous, s.q_offset = 2, s.seed = seed++;
          expect_device_equals_expected(s);
          s.q_offset = 1, s.seed = seed++;
          expect_device_equals_expected(s);
          s.x_layout = XLayout::transposed, s.q_like_x = false, s.q_offset = 0, s.seed = seed++;
          expect_device_equals_expected(s);
        }
      }
}

TEST(QuantizeDevice, e4m3_midpoints_round_to_even_as_the_host) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  // 448 in every 128-column block: amax 448, factor 1, so x itself is converted.
  for (ScaleGranularity g : kAllScaleGranularities) {
    QuantizeSpec s;
    s.in = DType::fp32, s.granularity = g, s.rows = 8, s.cols = 300, s.ties = true;
    expect_device_equals_expected(s);
  }
}

TEST(QuantizeDevice, a_block_with_a_non_finite_x_gets_a_nan_scale_and_nan_codes) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  uint32_t seed = 100;
  for (DType in : {DType::bf16, DType::fp32})
    for (ScaleGranularity g : kAllScaleGranularities) {
      QuantizeSpec s;
      s.in = in, s.granularity = g, s.instances = 2, s.rows = 200, s.cols = 300, s.non_finite = 6, s.seed = seed++;
      expect_device_equals_expected(s);
      s.x_layout = XLayout::transposed, s.seed = seed++;
      expect_device_equals_expected(s);
    }
  // The expectation is not vacuous: a block poisoned on the device differs from the host's.
  QuantizeSpec s;
  s.granularity = ScaleGranularity::block_1x128, s.non_finite = 1;
  const QuantizeProblem p = QuantizeProblem::make(s);
  const auto [got_q, got_s] = run_on_device(p);
  int nan_scales = 0;
  for (size_t i = 0; i + 4 <= got_s.size(); i += 4) {
    uint32_t bits;
    std::memcpy(&bits, got_s.data() + i, 4);
    nan_scales += bits == 0x7fc00000u;
  }
  EXPECT_EQ(nan_scales, 1);
}

TEST(QuantizeDevice, many_tiles_take_the_grid_stride_and_repeat_bitwise) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  for (ScaleGranularity g : kAllScaleGranularities) {
    QuantizeSpec s;
    s.granularity = g, s.instances = 2, s.rows = 4100, s.cols = 2100, s.seed = 7;
    const QuantizeProblem p = QuantizeProblem::make(s);
    const auto want = p.expected_on_device();
    const auto first = run_on_device(p);
    EXPECT_EQ(first_difference(first.first, want.first), "") << "q of " << s.label();
    EXPECT_EQ(first_difference(first.second, want.second), "") << "scales of " << s.label();
    const auto second = run_on_device(p);
    EXPECT_TRUE(second == first) << s.label();
    // Negative control: the checker sees one scale off by an ulp.
    Bytes shifted = want.second;
    shifted[p.s.offset] ^= std::byte{1};
    EXPECT_NE(first_difference(first.second, shifted), "");
  }
}

TEST(QuantizeDevice, empty_matrices_and_rows_still_get_their_scales) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  for (const Shape& sh : {Shape{-1, 0, 5}, Shape{3, 0, 7}, Shape{-1, 4, 0}, Shape{2, 3, 0}, Shape{0, 3, 5}}) {
    for (ScaleGranularity g : kAllScaleGranularities) {
      QuantizeSpec s;
      s.granularity = g, s.instances = sh.instances, s.rows = sh.rows, s.cols = sh.cols;
      expect_device_equals_expected(s);
    }
  }
}

}  // namespace
}  // namespace gemmops::testing
