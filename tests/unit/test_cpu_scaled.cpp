// tests/unit/test_cpu_scaled.cpp: the CPU operators on scaled fp8 operands against a direct float64
// reference written here, for every granularity x layout x form, on ragged groups
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cpu/convert.hpp"
#include "cpu/cpu_operator.hpp"

namespace gemmops {
namespace {

constexpr float kPoison = -12345.0f;

// A host tensor that owns its bytes.
template <class T>
struct Owned {
  std::vector<T> bytes;
  TensorDesc desc;
};

// fp8 codes of random normal values (never NaN), row-major of `shape`.
Owned<uint8_t> random_fp8(DType dtype, std::vector<int64_t> shape, std::mt19937& rng) {
  Owned<uint8_t> t;
  t.desc = TensorDesc::contiguous(dtype, shape);
  std::normal_distribution<float> v(0.0f, 2.0f);
  t.bytes.resize(static_cast<size_t>(t.desc.numel()));
  for (auto& b : t.bytes) b = dtype == DType::e4m3 ? cpu::float_to_e4m3(v(rng)) : cpu::float_to_e5m2(v(rng));
  t.desc.data = t.bytes.data();
  return t;
}

double fp8_value(const TensorDesc& t, int64_t offset) {
  const uint8_t c = static_cast<const uint8_t*>(t.data)[offset];
  return t.dtype == DType::e4m3 ? cpu::e4m3_to_float(c) : cpu::e5m2_to_float(c);
}

// Scales of `shape` in `layout` (mn_major: dimension -2 contiguous, leading dimension padded to 4),
// random in [0.25, 4), with every padding element NaN so that reading one shows.
Owned<float> random_scales(ScaleGranularity g, std::vector<int64_t> shape, ScaleLayout layout, std::mt19937& rng) {
  Owned<float> t;
  const size_t r = shape.size();
  std::vector<int64_t> strides(r);
  int64_t size = 1;
  if (layout == ScaleLayout::mn_major && r >= 2) {
    const int64_t ld = (shape[r - 2] + 3) / 4 * 4;
    strides[r - 2] = 1, strides[r - 1] = ld;
    if (r == 3) strides[0] = ld * shape[2];
    size = (r == 3 ? shape[0] : 1) * ld * shape[r - 1];
  } else {
    for (size_t i = r; i-- > 0;) strides[i] = size, size *= shape[i];
  }
  t.bytes.assign(static_cast<size_t>(size), std::nanf(""));
  t.desc = TensorDesc(DType::fp32, shape, strides, Device::cpu());
  std::uniform_real_distribution<float> v(0.25f, 4.0f);
  // Visit every logical index and fill it.
  std::vector<int64_t> idx(r, 0);
  const int64_t n = t.desc.numel();
  for (int64_t e = 0; e < n; ++e) {
    int64_t off = 0, rest = e;
    for (size_t i = r; i-- > 0;) off += (rest % shape[i]) * strides[i], rest /= shape[i];
    t.bytes[static_cast<size_t>(off)] = v(rng);
  }
  (void)g;
  t.desc.data = t.bytes.data();
  return t;
}

// The reference's own scale lookup: the index tuple the documentation gives, through the strides.
// `lead` is the instance (stacked) or the group (K-grouped tensor and row scales), -1 when none.
double scale_at(const OperandScales& s, int64_t lead, int64_t mn, int64_t k) {
  int64_t idx[3];
  int n = 0;
  if (lead >= 0) idx[n++] = lead;
  switch (s.granularity) {
    case ScaleGranularity::tensor:
      if (n == 0) idx[n++] = 0;
      break;
    case ScaleGranularity::row: idx[n++] = mn; break;
    case ScaleGranularity::block_1x128: idx[n++] = mn, idx[n++] = k / 128; break;
    case ScaleGranularity::block_128x128: idx[n++] = mn / 128, idx[n++] = k / 128; break;
  }
  int64_t off = 0;
  for (int i = 0; i < n; ++i) off += idx[i] * s.scales.strides[static_cast<size_t>(i)];
  return static_cast<const float*>(s.scales.data)[off];
}

struct Case {
  OperationKind kind;
  std::vector<int32_t> offsets;  // grouped forms
  int64_t l = 1, m = 0, n = 0, k = 0;  // m: TotalM (grouped_m); n: TotalN (grouped_n); k: TotalK (grouped_k)
  std::string describe() const {
    std::string s = std::string(name(kind)) + " m=" + std::to_string(m) + " n=" + std::to_string(n) +
                    " k=" + std::to_string(k) + " offsets=";
    for (int32_t o : offsets) s += std::to_string(o) + ",";
    return s;
  }
};

struct Problem {
  Owned<uint8_t> A, B;
  Owned<float> sa, sb, out;
  Owned<int32_t> offsets;
  Arguments args;
};

// Shapes of A, B, out per form, and of the scales per granularity (as docs/fp8.md lists them).
Problem make(const Case& c, std::optional<ScaleGranularity> ga, std::optional<ScaleGranularity> gb, ScaleLayout layout,
             DType a_type, DType b_type, std::mt19937& rng) {
  Problem p;
  const int64_t G = static_cast<int64_t>(c.offsets.size());
  auto kb = [](int64_t k) { return (k + 127) / 128; };
  auto nb = kb;
  std::vector<int64_t> a_shape, b_shape, out_shape;
  // (lead, mn, k) of each operand; lead -1 = not stacked.
  int64_t a_lead = -1, b_lead = -1, a_mn = c.m, b_mn = c.n;
  switch (c.kind) {
    case OperationKind::gemm: a_shape = {c.m, c.k}, b_shape = {c.k, c.n}, out_shape = {c.m, c.n}; break;
    case OperationKind::batched_gemm:
      a_shape = {c.l, c.m, c.k}, b_shape = {c.l, c.k, c.n}, out_shape = {c.l, c.m, c.n}, a_lead = b_lead = c.l;
      break;
    case OperationKind::grouped_m: a_shape = {c.m, c.k}, b_shape = {G, c.k, c.n}, out_shape = {c.m, c.n}, b_lead = G; break;
    case OperationKind::grouped_k: a_shape = {c.m, c.k}, b_shape = {c.k, c.n}, out_shape = {G, c.m, c.n}; break;
    case OperationKind::grouped_n: a_shape = {G, c.m, c.k}, b_shape = {c.k, c.n}, out_shape = {c.m, c.n}, a_lead = G; break;
    case OperationKind::grouped_m_masked:  // m is MaxM; the offsets are row counts
      a_shape = {G, c.m, c.k}, b_shape = {G, c.k, c.n}, out_shape = {G, c.m, c.n}, a_lead = b_lead = G;
      break;
  }
  auto shape_for = [&](ScaleGranularity g, int64_t lead, int64_t mn) {
    std::vector<int64_t> s;
    if (lead >= 0) s.push_back(lead);
    else if (c.kind == OperationKind::grouped_k && (g == ScaleGranularity::tensor || g == ScaleGranularity::row)) s.push_back(G);
    switch (g) {
      case ScaleGranularity::tensor: if (s.empty()) s.push_back(1); break;
      case ScaleGranularity::row: s.push_back(mn); break;
      case ScaleGranularity::block_1x128: s.push_back(mn), s.push_back(kb(c.k)); break;
      case ScaleGranularity::block_128x128: s.push_back(nb(mn)), s.push_back(kb(c.k)); break;
    }
    return s;
  };
  auto layout_for = [&](ScaleGranularity g) {
    return g == ScaleGranularity::block_1x128 || g == ScaleGranularity::block_128x128 ? layout : ScaleLayout::k_major;
  };
  p.A = random_fp8(a_type, a_shape, rng);
  p.B = random_fp8(b_type, b_shape, rng);
  p.out.desc = TensorDesc::contiguous(DType::fp32, out_shape);
  p.out.bytes.assign(static_cast<size_t>(p.out.desc.numel()), kPoison);
  p.out.desc.data = p.out.bytes.data();
  std::optional<OperandScales> sa, sb;
  if (ga) {
    p.sa = random_scales(*ga, shape_for(*ga, a_lead, a_mn), layout_for(*ga), rng);
    sa = OperandScales{p.sa.desc, *ga, layout_for(*ga)};
  }
  if (gb) {
    p.sb = random_scales(*gb, shape_for(*gb, b_lead, b_mn), layout_for(*gb), rng);
    sb = OperandScales{p.sb.desc, *gb, layout_for(*gb)};
  }
  if (c.kind == OperationKind::gemm || c.kind == OperationKind::batched_gemm) {
    GemmArguments g{p.A.desc, p.B.desc, p.out.desc};
    g.a_scales = sa, g.b_scales = sb;
    p.args = g;
  } else {
    p.offsets.bytes = c.offsets;
    p.offsets.desc = TensorDesc::contiguous(DType::i32, {G}, Device::cpu(), p.offsets.bytes.data());
    GroupedGemmArguments g{p.A.desc, p.B.desc, p.out.desc, DType::fp32, p.offsets.desc};
    g.a_scales = sa, g.b_scales = sb;
    p.args = g;
  }
  return p;
}

// The direct reference: out[o] = sum_k A[.., r, k] sa(..) * B[.., k, c] sb(..) in float64, with the
// K-grouped block scales at the global K block (`local_k_blocks` indexes them from each group's
// start instead: the rule the test must be able to tell apart). NaN marks an element not written.
std::vector<double> reference(const Case& c, const Problem& p, bool local_k_blocks = false) {
  const auto& A = p.A.desc;
  const auto& B = p.B.desc;
  const auto sa = std::visit([](const auto& x) { return x.a_scales; }, p.args);
  const auto sb = std::visit([](const auto& x) { return x.b_scales; }, p.args);
  std::vector<double> out(static_cast<size_t>(p.out.desc.numel()), std::nan(""));
  // a(inst, r, k) / b(inst, k, col): the dequantised values; `lead` picks the scale's instance/group.
  auto a = [&](int64_t inst, int64_t r, int64_t k, int64_t lead, int64_t kk) {
    const int64_t off = (A.rank() == 3 ? inst * A.strides[0] : 0) + r * A.stride(-2) + k * A.stride(-1);
    return fp8_value(A, off) * (sa ? scale_at(*sa, lead, r, kk) : 1.0);
  };
  auto b = [&](int64_t inst, int64_t k, int64_t col, int64_t lead, int64_t kk) {
    const int64_t off = (B.rank() == 3 ? inst * B.strides[0] : 0) + k * B.stride(-2) + col * B.stride(-1);
    return fp8_value(B, off) * (sb ? scale_at(*sb, lead, col, kk) : 1.0);
  };
  const bool a_per_group = sa && (sa->granularity == ScaleGranularity::tensor || sa->granularity == ScaleGranularity::row);
  const bool b_per_group = sb && (sb->granularity == ScaleGranularity::tensor || sb->granularity == ScaleGranularity::row);
  int64_t start = 0;
  switch (c.kind) {
    case OperationKind::gemm:
    case OperationKind::batched_gemm: {
      const int64_t L = c.kind == OperationKind::gemm ? 1 : c.l, lead = c.kind == OperationKind::gemm ? -1 : 0;
      for (int64_t l = 0; l < L; ++l)
        for (int64_t r = 0; r < c.m; ++r)
          for (int64_t col = 0; col < c.n; ++col) {
            double s = 0;
            for (int64_t k = 0; k < c.k; ++k) s += a(l, r, k, lead < 0 ? -1 : l, k) * b(l, k, col, lead < 0 ? -1 : l, k);
            out[static_cast<size_t>((l * c.m + r) * c.n + col)] = s;
          }
      break;
    }
    case OperationKind::grouped_m:
      for (size_t g = 0; g < c.offsets.size(); ++g) {
        const auto gi = static_cast<int64_t>(g);
        for (int64_t r = start; r < c.offsets[g]; ++r)
          for (int64_t col = 0; col < c.n; ++col) {
            double s = 0;
            for (int64_t k = 0; k < c.k; ++k) s += a(0, r, k, -1, k) * b(gi, k, col, gi, k);
            out[static_cast<size_t>(r * c.n + col)] = s;
          }
        start = c.offsets[g];
      }
      break;
    case OperationKind::grouped_k:
      for (size_t g = 0; g < c.offsets.size(); ++g) {
        const auto gi = static_cast<int64_t>(g);
        for (int64_t r = 0; r < c.m; ++r)
          for (int64_t col = 0; col < c.n; ++col) {
            double s = 0;
            for (int64_t k = start; k < c.offsets[g]; ++k) {
              const int64_t kk = local_k_blocks ? k - start : k;
              s += a(0, r, k, a_per_group ? gi : -1, kk) * b(0, k, col, b_per_group ? gi : -1, kk);
            }
            out[static_cast<size_t>((gi * c.m + r) * c.n + col)] = s;
          }
        start = c.offsets[g];
      }
      break;
    case OperationKind::grouped_n:
      for (size_t g = 0; g < c.offsets.size(); ++g) {
        const auto gi = static_cast<int64_t>(g);
        for (int64_t r = 0; r < c.m; ++r)
          for (int64_t col = start; col < c.offsets[g]; ++col) {
            double s = 0;
            for (int64_t k = 0; k < c.k; ++k) s += a(gi, r, k, gi, k) * b(0, k, col, -1, k);
            out[static_cast<size_t>(r * c.n + col)] = s;
          }
        start = c.offsets[g];
      }
      break;
    case OperationKind::grouped_m_masked:
      for (size_t g = 0; g < c.offsets.size(); ++g) {
        const auto gi = static_cast<int64_t>(g);
        for (int64_t r = 0; r < c.offsets[g]; ++r)
          for (int64_t col = 0; col < c.n; ++col) {
            double s = 0;
            for (int64_t k = 0; k < c.k; ++k) s += a(gi, r, k, gi, k) * b(gi, k, col, gi, k);
            out[static_cast<size_t>((gi * c.m + r) * c.n + col)] = s;
          }
      }
      break;
  }
  return out;
}

// Every written element within fp32 summation error; every unwritten one still the poison.
::testing::AssertionResult matches(const std::vector<double>& want, const Problem& p, int64_t k) {
  const auto& got = p.out.bytes;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      if (got[i] != kPoison) return ::testing::AssertionFailure() << "element " << i << " written: " << got[i];
      continue;
    }
    const double tol = 1e-5 * (std::fabs(want[i]) + 64.0) * std::sqrt(double(k) + 1.0);
    if (!(std::fabs(got[i] - want[i]) <= tol))
      return ::testing::AssertionFailure() << "element " << i << ": got " << got[i] << ", want " << want[i];
  }
  return ::testing::AssertionSuccess();
}

// Ragged groups: an empty group, a 1-row (1-K, 1-column) group, K not a multiple of 128, rows
// (columns) past offsets[G-1], K-grouped 128-blocks straddling groups.
std::vector<Case> cases() {
  return {
      {OperationKind::gemm, {}, 1, 37, 21, 300},
      {OperationKind::batched_gemm, {}, 2, 19, 13, 129},
      {OperationKind::grouped_m, {0, 1, 60, 60, 200}, 1, 213, 17, 300},  // empty groups, 1 row, 13 rows past
      {OperationKind::grouped_k, {0, 100, 101, 250, 257}, 1, 9, 11, 300},  // blocks 0, 1 and 2 straddle groups
      {OperationKind::grouped_n, {0, 1, 140, 140}, 1, 7, 150, 130},      // 10 columns past the end
      {OperationKind::grouped_m_masked, {9, 0, 1, 5}, 1, 9, 13, 200},    // full, empty, 1 row, 4 rows unwritten
  };
}

constexpr ScaleGranularity kGranularities[] = {ScaleGranularity::tensor, ScaleGranularity::row,
                                               ScaleGranularity::block_1x128, ScaleGranularity::block_128x128};

TEST(CpuScaled, every_granularity_layout_and_form_matches_the_direct_reference) {
  std::mt19937 rng(2024);
  int runs = 0;
  for (const Case& c : cases())
    for (ScaleGranularity ga : kGranularities)
      for (ScaleGranularity gb : kGranularities)
        for (ScaleLayout layout : {ScaleLayout::k_major, ScaleLayout::mn_major}) {
          Problem p = make(c, ga, gb, layout, DType::e4m3, DType::e4m3, rng);
          const cpu::CpuOperator op(c.kind);
          const Status s = op.run(p.args);
          ASSERT_TRUE(s) << c.describe() << ": " << s.to_string();
          EXPECT_TRUE(matches(reference(c, p), p, c.k))
              << c.describe() << " a " << name(ga) << " b " << name(gb) << " " << name(layout);
          ++runs;
        }
  EXPECT_EQ(runs, 6 * 4 * 4 * 2);
}

TEST(CpuScaled, one_scaled_operand_and_mixed_fp8_types_work) {
  std::mt19937 rng(5);
  for (const Case& c : cases()) {
    for (auto [ga, gb] : {std::pair{std::optional{ScaleGranularity::block_1x128}, std::optional<ScaleGranularity>{}},
                          std::pair{std::optional<ScaleGranularity>{}, std::optional{ScaleGranularity::block_128x128}}}) {
      Problem p = make(c, ga, gb, ScaleLayout::mn_major, DType::e4m3, DType::e5m2, rng);
      const Status s = cpu::CpuOperator(c.kind).run(p.args);
      ASSERT_TRUE(s) << c.describe() << ": " << s.to_string();
      EXPECT_TRUE(matches(reference(c, p), p, c.k)) << c.describe();
    }
  }
}

// A test that can fail: indexing the straddling blocks from each group's start gives other values,
// which the operator's result must not match.
TEST(CpuScaled, k_grouped_straddling_blocks_use_the_global_k_block) {
  std::mt19937 rng(9);
  const Case c = cases()[3];
  ASSERT_EQ(c.kind, OperationKind::grouped_k);
  for (ScaleLayout layout : {ScaleLayout::k_major, ScaleLayout::mn_major}) {
    Problem p = make(c, ScaleGranularity::block_1x128, ScaleGranularity::block_1x128, layout, DType::e4m3,
                     DType::e4m3, rng);
    ASSERT_TRUE(cpu::CpuOperator(c.kind).run(p.args));
    EXPECT_TRUE(matches(reference(c, p), p, c.k));
    EXPECT_FALSE(matches(reference(c, p, /*local_k_blocks=*/true), p, c.k));
  }
}

TEST(CpuScaled, an_empty_k_group_writes_zeros_and_k_past_the_last_group_is_ignored) {
  std::mt19937 rng(3);
  Case c{OperationKind::grouped_k, {0, 100, 100}, 1, 5, 6, 300};  // K 100..299 belongs to no group
  Problem p = make(c, ScaleGranularity::row, ScaleGranularity::block_128x128, ScaleLayout::k_major, DType::e4m3,
                   DType::e4m3, rng);
  ASSERT_TRUE(cpu::CpuOperator(c.kind).run(p.args));
  EXPECT_TRUE(matches(reference(c, p), p, c.k));
  for (int64_t i = 0; i < 30; ++i) EXPECT_EQ(p.out.bytes[static_cast<size_t>(i)], 0.0f);           // group 0
  for (int64_t i = 60; i < 90; ++i) EXPECT_EQ(p.out.bytes[static_cast<size_t>(i)], 0.0f);          // group 2
}

}  // namespace
}  // namespace gemmops
