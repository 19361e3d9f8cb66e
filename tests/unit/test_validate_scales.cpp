// tests/unit/test_validate_scales.cpp: one test per rule of a_scales / b_scales (fp8 operands' scales),
// with messages, for every form; the signature and operator support of scaled operands
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <vector>

#include "core/signature.hpp"
#include "cpu/cpu_operator.hpp"
#include "gemmops/metadata.hpp"
#include "gemmops/registry.hpp"
#include "support/invalid.hpp"
#include "support/problems.hpp"
#include "support/sm90_operators.hpp"

namespace gemmops {
namespace {

using testing::make_batched;
using testing::make_gemm;
using testing::make_grouped_k;
using testing::make_grouped_m;
using testing::make_grouped_n;

constexpr DType kE4m3 = DType::e4m3;

using testing::invalid;

// Scales of `shape`, k_major (row-major) or mn_major (dimension -2 contiguous, the K-block
// dimension's stride `ld` >= size(-2), DeepGEMM's TMA-aligned form pads it to 4).
OperandScales scales(ScaleGranularity g, std::vector<int64_t> shape, ScaleLayout layout = ScaleLayout::k_major,
                     int64_t pad_to = 1, Device device = Device::cpu()) {
  OperandScales s;
  s.granularity = g;
  s.layout = layout;
  if (layout == ScaleLayout::k_major || shape.size() < 2) {
    s.scales = TensorDesc::contiguous(DType::fp32, shape, device);
    return s;
  }
  const size_t r = shape.size();
  const int64_t ld = (shape[r - 2] + pad_to - 1) / pad_to * pad_to;
  std::vector<int64_t> strides(r);
  strides[r - 2] = 1;
  strides[r - 1] = ld;
  if (r == 3) strides[0] = ld * shape[2];
  s.scales = TensorDesc(DType::fp32, shape, strides, device);
  return s;
}

constexpr auto kTensor = ScaleGranularity::tensor;
constexpr auto kRow = ScaleGranularity::row;
constexpr auto k1x128 = ScaleGranularity::block_1x128;
constexpr auto k128x128 = ScaleGranularity::block_128x128;
constexpr auto kMnMajor = ScaleLayout::mn_major;

TEST(ValidateScales, fp8_without_scales_stays_valid) {
  EXPECT_TRUE(validate(make_grouped_m(4, 100, 64, 300, kE4m3)));
  EXPECT_TRUE(validate(make_gemm(10, 20, 30, kE4m3, DType::bf16)));
}

// The shapes docs/fp8.md lists, for every form, granularity and layout.
TEST(ValidateScales, every_documented_shape_passes_in_both_layouts) {
  // M-grouped: A (TotalM=100, K=300), B (G=4, K=300, N=200); KB = 3.
  auto m = make_grouped_m(4, 100, 200, 300, kE4m3);
  for (auto [a, b] : {std::pair{scales(kTensor, {1}), scales(kTensor, {4})},
                      std::pair{scales(kRow, {100}), scales(kRow, {4, 200})},
                      std::pair{scales(k1x128, {100, 3}), scales(k1x128, {4, 200, 3})},
                      std::pair{scales(k128x128, {1, 3}), scales(k128x128, {4, 2, 3})},
                      std::pair{scales(k1x128, {100, 3}, kMnMajor, 4), scales(k128x128, {4, 2, 3}, kMnMajor, 4)}}) {
    m.a_scales = a, m.b_scales = b;
    EXPECT_TRUE(validate(m)) << validate(m).to_string();
  }
  // K-grouped: A (M=64, TotalK=300), B (TotalK=300, N=200), G = 5: tensor and row per group.
  auto k = make_grouped_k(5, 64, 200, 300, kE4m3);
  for (auto [a, b] : {std::pair{scales(kTensor, {5}), scales(kTensor, {5})},
                      std::pair{scales(kRow, {5, 64}), scales(kRow, {5, 200})},
                      std::pair{scales(k1x128, {64, 3}), scales(k1x128, {200, 3})},
                      std::pair{scales(k128x128, {1, 3}), scales(k128x128, {2, 3})},
                      std::pair{scales(k1x128, {64, 3}, kMnMajor, 4), scales(k1x128, {200, 3}, kMnMajor)}}) {
    k.a_scales = a, k.b_scales = b;
    EXPECT_TRUE(validate(k)) << validate(k).to_string();
  }
  // N-grouped: A (G=3, M=64, K=129), B (K=129, TotalN=500); KB = 2.
  auto n = make_grouped_n(3, 64, 500, 129, kE4m3);
  n.a_scales = scales(k1x128, {3, 64, 2}, kMnMajor, 4), n.b_scales = scales(k128x128, {4, 2});
  EXPECT_TRUE(validate(n)) << validate(n).to_string();
  n.a_scales = scales(kTensor, {3}), n.b_scales = scales(kRow, {500});
  EXPECT_TRUE(validate(n)) << validate(n).to_string();
  // Dense and batched.
  auto d = make_gemm(10, 20, 256, kE4m3, DType::bf16);
  d.a_scales = scales(kTensor, {1}), d.b_scales = scales(k128x128, {1, 2}, kMnMajor);
  EXPECT_TRUE(validate(d)) << validate(d).to_string();
  auto l = make_batched(2, 10, 20, 30, kE4m3);
  l.out.dtype = DType::bf16;
  l.a_scales = scales(kRow, {2, 10}), l.b_scales = scales(k1x128, {2, 20, 1});
  EXPECT_TRUE(validate(l)) << validate(l).to_string();
}

TEST(ValidateScales, scales_apply_to_fp8_operands_only) {
  auto g = make_grouped_m(4, 100, 64, 300);
  g.a_scales = scales(k1x128, {100, 3});
  EXPECT_EQ(invalid(g), "a_scales: scales apply to fp8 operands (e4m3, e5m2) only; A is bf16");
  g.a_scales.reset();
  g.b_scales = scales(kRow, {4, 64});
  EXPECT_EQ(invalid(g), "b_scales: scales apply to fp8 operands (e4m3, e5m2) only; B is bf16");
}

TEST(ValidateScales, dtype_must_be_fp32) {
  auto g = make_grouped_m(4, 100, 64, 300, kE4m3);
  g.b_scales = scales(kRow, {4, 64});
  g.b_scales->scales.dtype = DType::bf16;
  EXPECT_EQ(invalid(g), "b_scales: dtype must be fp32; got bf16");
}

TEST(ValidateScales, layout_rules_of_any_tensor_apply) {
  auto g = make_gemm(10, 20, 30, kE4m3, DType::bf16);
  g.a_scales = scales(kRow, {10});
  g.a_scales->scales.strides = {-1};
  EXPECT_EQ(invalid(g), "a_scales: strides must be non-negative; got strides (-1,)");
}

TEST(ValidateScales, m_grouped_shapes_name_the_rule) {
  auto g = make_grouped_m(4, 100, 200, 300, kE4m3);
  g.a_scales = scales(k1x128, {100, 2});
  EXPECT_EQ(invalid(g), "a_scales: block_1x128 scales of A (TotalM,K) = (100, 300) must have shape "
                        "(TotalM, ceil(K/128)) = (100, 3); got (100, 2)");
  g.a_scales = scales(kTensor, {4});
  EXPECT_EQ(invalid(g), "a_scales: tensor scales of A (TotalM,K) = (100, 300) must have shape (1,) = (1,); got (4,)");
  g.a_scales.reset();
  g.b_scales = scales(k128x128, {4, 200, 3});
  EXPECT_EQ(invalid(g), "b_scales: block_128x128 scales of B (G,K,N) = (4, 300, 200) must have shape "
                        "(G, ceil(N/128), ceil(K/128)) = (4, 2, 3); got (4, 200, 3)");
  g.b_scales = scales(kRow, {200});
  EXPECT_EQ(invalid(g), "b_scales: row scales of B (G,K,N) = (4, 300, 200) must have shape (G, N) = (4, 200); got (200,)");
}

TEST(ValidateScales, k_grouped_tensor_and_row_scales_are_per_group_and_block_scales_global) {
  auto g = make_grouped_k(5, 64, 200, 300, kE4m3);
  g.a_scales = scales(kRow, {64});
  EXPECT_EQ(invalid(g), "a_scales: row scales of A (M,TotalK) = (64, 300) must have shape (G, M) = (5, 64); got (64,)");
  g.a_scales = scales(kTensor, {1});
  EXPECT_EQ(invalid(g), "a_scales: tensor scales of A (M,TotalK) = (64, 300) must have shape (G,) = (5,); got (1,)");
  g.a_scales = scales(k1x128, {5, 64, 3});
  EXPECT_EQ(invalid(g), "a_scales: block_1x128 scales of A (M,TotalK) = (64, 300) must have shape "
                        "(M, ceil(TotalK/128)) = (64, 3); got (5, 64, 3)");
  g.a_scales.reset();
  g.b_scales = scales(k1x128, {3, 200});
  EXPECT_EQ(invalid(g), "b_scales: block_1x128 scales of B (TotalK,N) = (300, 200) must have shape "
                        "(N, ceil(TotalK/128)) = (200, 3); got (3, 200)");
}

TEST(ValidateScales, n_grouped_dense_and_batched_shapes_name_the_rule) {
  auto n = make_grouped_n(3, 64, 500, 129, kE4m3);
  n.a_scales = scales(k1x128, {64, 2});
  EXPECT_EQ(invalid(n), "a_scales: block_1x128 scales of A (G,M,K) = (3, 64, 129) must have shape "
                        "(G, M, ceil(K/128)) = (3, 64, 2); got (64, 2)");
  n.a_scales.reset();
  n.b_scales = scales(k128x128, {4, 1});
  EXPECT_EQ(invalid(n), "b_scales: block_128x128 scales of B (K,TotalN) = (129, 500) must have shape "
                        "(ceil(TotalN/128), ceil(K/128)) = (4, 2); got (4, 1)");
  auto d = make_gemm(10, 20, 30, kE4m3, DType::bf16);
  d.b_scales = scales(kRow, {10});
  EXPECT_EQ(invalid(d), "b_scales: row scales of B (K,N) = (30, 20) must have shape (N) = (20,); got (10,)");
  auto l = make_batched(2, 10, 20, 30, kE4m3);
  l.out.dtype = DType::bf16;
  l.a_scales = scales(kTensor, {1});
  EXPECT_EQ(invalid(l), "a_scales: tensor scales of A (L,M,K) = (2, 10, 30) must have shape (L,) = (2,); got (1,)");
}

TEST(ValidateScales, k_major_block_scales_have_k_blocks_contiguous) {
  auto g = make_grouped_m(4, 100, 200, 300, kE4m3);
  g.a_scales = scales(k1x128, {100, 3});
  g.a_scales->scales.strides = {1, 100};  // mn_major strides under the k_major name
  EXPECT_EQ(invalid(g), "a_scales: k_major block scales must have their last dimension (K blocks) contiguous "
                        "(stride 1); got strides (1, 100)");
  g.a_scales->scales.strides = {2, 1};
  EXPECT_EQ(invalid(g), "a_scales: k_major block scales must not overlap: stride(-2) must be at least 3; got "
                        "strides (2, 1)");
  g.a_scales->scales.strides = {4, 1};  // padded rows are fine
  EXPECT_TRUE(validate(g));
}

TEST(ValidateScales, mn_major_block_scales_have_mn_contiguous) {
  auto g = make_grouped_m(4, 100, 200, 300, kE4m3);
  g.a_scales = scales(k1x128, {100, 3}, kMnMajor);
  g.a_scales->scales.strides = {3, 1};
  EXPECT_EQ(invalid(g), "a_scales: mn_major block scales must have dimension -2 (TotalM) contiguous (stride 1); "
                        "got strides (3, 1)");
  g.a_scales->scales.strides = {1, 99};
  EXPECT_EQ(invalid(g), "a_scales: mn_major block scales must not overlap: stride(-1) must be at least 100; got "
                        "strides (1, 99)");
  g.a_scales.reset();
  g.b_scales = scales(k128x128, {4, 2, 3}, kMnMajor, 4);  // (G, NB, KB) strides (12, 1, 4)
  g.b_scales->scales.strides = {8, 1, 4};
  EXPECT_EQ(invalid(g), "b_scales: block scales of different G must not overlap: stride(0) must be at least 10; "
                        "got strides (8, 1, 4)");
  g.b_scales->scales.strides = {1, 4, 4};
  EXPECT_EQ(invalid(g), "b_scales: mn_major block scales must have dimension -2 (N blocks) contiguous (stride 1); "
                        "got strides (1, 4, 4)");
}

TEST(ValidateScales, mn_major_applies_to_block_scales_only) {
  auto g = make_grouped_m(4, 100, 200, 300, kE4m3);
  g.b_scales = scales(kRow, {4, 200});
  g.b_scales->layout = kMnMajor;
  EXPECT_EQ(invalid(g), "b_scales: layout mn_major applies to block scales only; got row scales");
}

TEST(ValidateScales, scales_must_be_on_a_device) {
  auto g = make_grouped_m(4, 100, 200, 300, kE4m3);
  g.a_scales = scales(k1x128, {100, 3}, ScaleLayout::k_major, 1, Device::cuda(0));
  EXPECT_EQ(invalid(g), "a_scales: must be on A's device (cpu); got cuda:0");
}

TEST(ValidateScales, out_must_not_overlap_the_scales) {
  std::vector<float> memory(4096);
  auto g = make_gemm(10, 20, 30, kE4m3, DType::fp32);
  g.out.data = memory.data();
  g.b_scales = scales(kRow, {20});
  g.b_scales->scales.data = memory.data() + 8;
  EXPECT_TRUE(validate_structure(g));
  const std::string m = invalid(g);
  EXPECT_EQ(m.rfind("out: must not overlap b_scales in memory; out spans [", 0), 0u) << m;
}

TEST(ValidateScales, fake_scales_are_allowed_for_discovery_but_not_run) {
  auto g = make_grouped_m(2, 4, 8, 16, kE4m3);
  g.out.dtype = DType::fp32;
  g.a_scales = scales(k1x128, {4, 1});
  const cpu::CpuOperator op(OperationKind::grouped_m);
  EXPECT_TRUE(op.supports(g, Target::cpu()));
  std::vector<uint8_t> a(64), b(256);
  std::vector<float> out(32);
  std::vector<int32_t> offsets{2, 4};
  g.A.data = a.data(), g.B.data = b.data(), g.out.data = out.data(), g.offsets.data = offsets.data();
  const Status s = op.run(g);
  EXPECT_EQ(s.message(), "a_scales: run needs data; got a fake tensor (no data pointer)");
}

// --- signature: presence, granularity and layout are part of it ---

TEST(ScaleSignature, differs_per_presence_granularity_and_layout) {
  auto base = make_grouped_m(4, 128, 256, 256, kE4m3);
  std::vector<detail::Signature> seen;
  auto add = [&](const GroupedGemmArguments& g) {
    const detail::Signature s = detail::signature_of(g);
    EXPECT_TRUE(s.valid);
    for (const auto& other : seen) EXPECT_FALSE(s == other);
    seen.push_back(s);
  };
  add(base);
  auto g = base;
  g.a_scales = scales(kTensor, {1});
  add(g);
  g.a_scales = scales(kRow, {128});
  add(g);
  g.a_scales = scales(k1x128, {128, 2});
  add(g);
  g.a_scales = scales(k1x128, {128, 2}, kMnMajor);
  add(g);
  g.a_scales = scales(k128x128, {1, 2});
  add(g);
  g.a_scales = scales(k128x128, {1, 2}, kMnMajor);  // same strides as k_major (a single row): layout decides
  add(g);
  g.a_scales.reset();
  g.b_scales = scales(k128x128, {4, 2, 2});
  add(g);
  g.a_scales = scales(k1x128, {128, 2});  // both, the widest signature: still fits
  g.b_scales = scales(k1x128, {4, 256, 2}, kMnMajor, 4);
  add(g);
  // Equal arguments, equal signatures.
  auto again = g;
  EXPECT_TRUE(detail::signature_of(again) == detail::signature_of(g));
  auto dense = make_batched(2, 10, 20, 30, kE4m3);
  const detail::Signature plain = detail::signature_of(dense);
  dense.a_scales = scales(kRow, {2, 10});
  EXPECT_FALSE(detail::signature_of(dense) == plain);
  EXPECT_TRUE(detail::signature_of(dense).valid);
}

// --- discovery: operators declare the scalings they serve ---

TEST(ScaleSupport, the_default_serves_none_and_names_operand_and_granularity) {
  OperandConstraints c;  // any kind, dtype, layout; no scalings
  auto g = make_grouped_m(4, 100, 200, 300, kE4m3);
  EXPECT_TRUE(check_constraints(c, g));
  g.a_scales = scales(k1x128, {100, 3});
  Status s = check_constraints(c, g);
  EXPECT_EQ(s.code(), ErrorCode::unsupported);
  EXPECT_EQ(s.message(), "a_scales: block_1x128 scaling is not served by this operator");
  g.a_scales.reset();
  g.b_scales = scales(k128x128, {4, 2, 3});
  EXPECT_EQ(check_constraints(c, g).message(), "b_scales: block_128x128 scaling is not served by this operator");
}

TEST(ScaleSupport, a_served_granularity_still_needs_its_layout) {
  OperandConstraints c;
  c.scalings.a = {k1x128};
  c.scalings.b = {k128x128};
  c.scalings.layouts = {ScaleLayout::k_major};
  auto g = make_grouped_m(4, 100, 200, 300, kE4m3);
  g.a_scales = scales(k1x128, {100, 3});
  g.b_scales = scales(k128x128, {4, 2, 3});
  EXPECT_TRUE(check_constraints(c, g));
  g.a_scales = scales(k1x128, {100, 3}, kMnMajor, 4);
  EXPECT_EQ(check_constraints(c, g).message(), "a_scales: mn_major block scales are not served by this operator");
  g.a_scales = scales(kRow, {100});
  EXPECT_EQ(check_constraints(c, g).message(), "a_scales: row scaling is not served by this operator");
  g.a_scales.reset();
  g.b_scales = scales(k1x128, {4, 200, 3});
  EXPECT_EQ(check_constraints(c, g).message(), "b_scales: block_1x128 scaling is not served by this operator");
}

TEST(ScaleSupport, every_gpu_operator_rejects_scaled_operands_with_the_reason) {
  // Their dtype lists refuse fp8 first today; with fp8 allowed, the scaling rule is the reason.
  auto g = make_grouped_m(4, 128, 256, 256, kE4m3, Device::cuda(0));
  g.a_scales = scales(k1x128, {128, 2}, kMnMajor, 4, Device::cuda(0));
  int checked = 0;
  for (const OperatorPtr& op : default_registry().all()) {
    if (op->metadata().target.kind == Target::cpu().kind) continue;
    // The fp8 main loop's operators serve block scales (tests/unit/test_sm90_fp8_support.cpp).
    if (!op->metadata().constraints.scalings.a.empty()) continue;
    OperandConstraints c = op->metadata().constraints;
    c.kinds.clear(), c.a_dtypes.clear(), c.b_dtypes.clear(), c.out_dtypes.clear(), c.a_majors.clear();
    c.b_majors.clear(), c.alignment_bytes = 1, c.out_row_major = false;
    const Status s = check_constraints(c, g);
    EXPECT_EQ(s.message(), "a_scales: block_1x128 scaling is not served by this operator") << op->name();
    EXPECT_FALSE(op->supports(g, op->metadata().target)) << op->name();
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(ScaleSupport, cpu_operators_serve_every_granularity_and_layout) {
  for (OperationKind kind : kAllOperationKinds) {
    const ScalingSupport& s = cpu::CpuOperator::make_metadata(kind).constraints.scalings;
    EXPECT_EQ(s.a.size(), 4u);
    EXPECT_EQ(s.b.size(), 4u);
    EXPECT_EQ(s.layouts.size(), 2u);
  }
  auto g = make_grouped_k(5, 64, 200, 300, kE4m3);
  g.out.dtype = DType::fp32;
  g.a_scales = scales(k1x128, {64, 3}, kMnMajor, 4);
  g.b_scales = scales(kRow, {5, 200});
  const auto ops = get_operators(g, Target::cpu());
  ASSERT_FALSE(ops.empty());
  EXPECT_EQ(ops.front()->name(), "cpu_grouped_gemm_k");
}

TEST(ScaleShape, the_public_helper_sizes_the_buffers) {
  EXPECT_EQ(scale_shape(k1x128, -1, 100, 300), (std::vector<int64_t>{100, 3}));
  EXPECT_EQ(scale_shape(k128x128, 4, 200, 300), (std::vector<int64_t>{4, 2, 3}));
  EXPECT_EQ(scale_shape(kRow, 4, 200, 300), (std::vector<int64_t>{4, 200}));
  EXPECT_EQ(scale_shape(kTensor, -1, 200, 300), (std::vector<int64_t>{1}));
  EXPECT_EQ(scale_shape(k1x128, -1, 5, 0), (std::vector<int64_t>{5, 0}));
}

}  // namespace
}  // namespace gemmops
