// tests/unit/test_validate_epilogue.cpp: one test per rule of the epilogue ops, with messages
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "gemmops/arguments.hpp"
#include "support/invalid.hpp"
#include "support/problems.hpp"

namespace gemmops {
namespace {

using testing::make_batched;
using testing::make_gemm;
using testing::make_grouped_k;
using testing::make_grouped_m;
using testing::make_grouped_n;

using testing::invalid;

TensorDesc fp32(std::vector<int64_t> shape, Device d = Device::cpu()) {
  return TensorDesc::contiguous(DType::fp32, std::move(shape), d);
}

// M-grouped, G = 4, TotalM = 64, product N = 16, with a gated activation: out (64, 8).
GroupedGemmArguments gated_m(Activation a = Activation::swiglu) {
  auto g = make_grouped_m(4, 64, 16, 32);
  g.out = TensorDesc::contiguous(DType::bf16, {64, 8});
  g.epilogue.activation = a;
  return g;
}

TEST(ValidateEpilogue, every_op_on_every_form_that_takes_them_passes) {
  for (Activation a : kAllActivations) {
    for (GateLayout layout : kAllGateLayouts) {
      const int64_t out_n = is_gated(a) ? 8 : 16;
      auto m = make_grouped_m(4, 64, 16, 32);
      m.out = TensorDesc::contiguous(DType::bf16, {64, out_n});
      m.epilogue = {a, layout, 1.702f, 7.0f, fp32({4, 16}), fp32({64})};
      EXPECT_TRUE(validate(m)) << name(a) << " " << validate(m).message();
      auto d = make_gemm(64, 16, 32);
      d.out = TensorDesc::contiguous(DType::bf16, {64, out_n});
      d.epilogue = {a, layout, 1.702f, 7.0f, TensorDesc::contiguous(DType::bf16, {16}), fp32({64})};
      EXPECT_TRUE(validate(d)) << name(a) << " " << validate(d).message();
      auto b = make_batched(3, 64, 16, 32);
      b.out = TensorDesc::contiguous(DType::bf16, {3, 64, out_n});
      b.epilogue = {a, layout, 1.702f, 7.0f, fp32({3, 16}), fp32({3, 64})};
      EXPECT_TRUE(validate(b)) << name(a) << " " << validate(b).message();
    }
  }
}

TEST(ValidateEpilogue, k_grouped_form_takes_no_epilogue_ops) {
  auto g = make_grouped_k(4, 16, 16, 64);
  g.epilogue.activation = Activation::silu;
  EXPECT_EQ(invalid(g), "epilogue: the K-grouped form (grouped_gemm_k) takes no epilogue ops (activation, bias, "
                        "row_scale); only the M-grouped, dense and batched forms do; got activation silu");
}

TEST(ValidateEpilogue, n_grouped_form_takes_no_epilogue_ops) {
  auto g = make_grouped_n(4, 16, 64, 16);
  g.epilogue.bias = fp32({4, 64});
  EXPECT_EQ(invalid(g), "epilogue: the N-grouped form (grouped_gemm_n) takes no epilogue ops (activation, bias, "
                        "row_scale); only the M-grouped, dense and batched forms do; got activation none, a bias");
}

TEST(ValidateEpilogue, an_empty_epilogue_is_fine_on_every_form) {
  auto k = make_grouped_k(4, 16, 16, 64);
  k.epilogue.gate_layout = GateLayout::interleaved;  // no op: nothing to serve
  k.epilogue.alpha = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(validate(k));
  EXPECT_TRUE(validate(make_grouped_n(4, 16, 64, 16)));
}

TEST(ValidateEpilogue, gated_product_n_must_be_even) {
  auto g = make_grouped_m(4, 64, 15, 32);
  g.out = TensorDesc::contiguous(DType::bf16, {64, 7});
  g.epilogue.activation = Activation::swiglu_oss;
  EXPECT_EQ(invalid(g), "epilogue.activation: swiglu_oss pairs gate and up columns, so the product's N (B's N) "
                        "must be even; got N = 15; B (G,K,N) = (4, 32, 15), out (TotalM,N/2) = (64, 7)");
}

TEST(ValidateEpilogue, gated_out_has_half_the_products_columns) {
  auto g = gated_m();
  g.out = TensorDesc::contiguous(DType::bf16, {64, 16});
  EXPECT_EQ(invalid(g), "out: N (16) must equal B's N / 2 (8) with the gated activation swiglu (one column per "
                        "gate/up pair); B (G,K,N) = (4, 32, 16), out (TotalM,N/2) = (64, 16)");
  auto d = make_gemm(64, 16, 32);
  d.epilogue.activation = Activation::swiglu;
  EXPECT_EQ(invalid(d), "out: N (16) must equal B's N / 2 (8) with the gated activation swiglu (one column per "
                        "gate/up pair); B (K,N) = (32, 16), out (M,N/2) = (64, 16)");
  auto b = make_batched(2, 64, 16, 32);
  b.epilogue.activation = Activation::swiglu;
  EXPECT_EQ(invalid(b), "out: N (16) must equal B's N / 2 (8) with the gated activation swiglu (one column per "
                        "gate/up pair); B (L,K,N) = (2, 32, 16), out (L,M,N/2) = (2, 64, 16)");
}

TEST(ValidateEpilogue, ungated_out_keeps_the_products_columns) {
  auto g = make_grouped_m(4, 64, 16, 32);
  g.out = TensorDesc::contiguous(DType::bf16, {64, 8});
  g.epilogue.activation = Activation::silu;
  EXPECT_EQ(invalid(g), "out: N (8) must equal B's N (16); B (G,K,N) = (4, 32, 16), out (TotalM,N) = (64, 8)");
}

TEST(ValidateEpilogue, bias_shape_is_g_by_products_n_when_m_grouped) {
  auto g = gated_m();
  g.epilogue.bias = fp32({4, 8});  // out's N, not the product's
  EXPECT_EQ(invalid(g), "epilogue.bias: must have shape (G,N) = (4, 16) (N is the product's, B's N: 2I with a "
                        "gated activation); got (4, 8)");
}

TEST(ValidateEpilogue, bias_shape_is_n_when_dense) {
  auto d = make_gemm(64, 16, 32);
  d.epilogue.bias = fp32({1, 16});
  EXPECT_EQ(invalid(d), "epilogue.bias: must have shape (N,) = (16,) (N is the product's, B's N: 2I with a "
                        "gated activation); got (1, 16)");
}

TEST(ValidateEpilogue, bias_shape_is_l_by_n_when_batched) {
  auto b = make_batched(3, 64, 16, 32);
  b.epilogue.bias = fp32({16});
  EXPECT_EQ(invalid(b), "epilogue.bias: must have shape (L,N) = (3, 16) (N is the product's, B's N: 2I with a "
                        "gated activation); got (16,)");
}

TEST(ValidateEpilogue, bias_dtype_is_fp32_or_outs) {
  auto g = gated_m();
  g.epilogue.bias = TensorDesc::contiguous(DType::fp16, {4, 16});
  EXPECT_EQ(invalid(g), "epilogue.bias: dtype must be fp32 or out's dtype (bf16); got fp16");
  g.epilogue.bias = TensorDesc::contiguous(DType::bf16, {4, 16});
  EXPECT_TRUE(validate(g));
}

TEST(ValidateEpilogue, bias_last_dimension_is_contiguous) {
  auto g = gated_m();
  g.epilogue.bias = TensorDesc(DType::fp32, {4, 16}, {1, 4}, Device::cpu());
  EXPECT_EQ(invalid(g), "epilogue.bias: last dimension must be contiguous (stride 1); got strides (1, 4)");
  g.epilogue.bias = TensorDesc(DType::fp32, {4, 16}, {32, 1}, Device::cpu());  // padded rows are fine
  EXPECT_TRUE(validate(g));
}

TEST(ValidateEpilogue, bias_is_on_outs_device) {
  auto g = gated_m();
  g.epilogue.bias = fp32({4, 16}, Device::cuda(0));
  EXPECT_EQ(invalid(g), "epilogue.bias: must be on out's device (cpu); got cuda:0");
}

TEST(ValidateEpilogue, bias_layout_rules_apply) {
  auto g = gated_m();
  g.epilogue.bias = TensorDesc(DType::fp32, {4, 16}, {16, -1}, Device::cpu());
  EXPECT_EQ(invalid(g), "epilogue.bias: strides must be non-negative; got strides (16, -1)");
}

TEST(ValidateEpilogue, row_scale_shape_is_total_m_when_m_grouped) {
  auto g = gated_m();
  g.epilogue.row_scale = fp32({4});
  EXPECT_EQ(invalid(g), "epilogue.row_scale: must have shape (TotalM,) = (64,); got (4,)");
}

TEST(ValidateEpilogue, row_scale_shape_is_m_when_dense) {
  auto d = make_gemm(64, 16, 32);
  d.epilogue.row_scale = fp32({64, 1});
  EXPECT_EQ(invalid(d), "epilogue.row_scale: must have shape (M,) = (64,); got (64, 1)");
}

TEST(ValidateEpilogue, row_scale_shape_is_l_by_m_when_batched) {
  auto b = make_batched(3, 64, 16, 32);
  b.epilogue.row_scale = fp32({192});
  EXPECT_EQ(invalid(b), "epilogue.row_scale: must have shape (L,M) = (3, 64); got (192,)");
}

TEST(ValidateEpilogue, row_scale_is_fp32) {
  auto g = gated_m();
  g.epilogue.row_scale = TensorDesc::contiguous(DType::bf16, {64});
  EXPECT_EQ(invalid(g), "epilogue.row_scale: dtype must be fp32; got bf16");
}

TEST(ValidateEpilogue, row_scale_is_contiguous) {
  auto g = gated_m();
  g.epilogue.row_scale = TensorDesc(DType::fp32, {64}, {2}, Device::cpu());
  EXPECT_EQ(invalid(g), "epilogue.row_scale: must be contiguous (row-major, no gaps); got shape (64,) strides (2,)");
  auto b = make_batched(3, 64, 16, 32);
  b.epilogue.row_scale = TensorDesc(DType::fp32, {3, 64}, {128, 1}, Device::cpu());
  EXPECT_EQ(invalid(b),
            "epilogue.row_scale: must be contiguous (row-major, no gaps); got shape (3, 64) strides (128, 1)");
}

TEST(ValidateEpilogue, row_scale_is_on_outs_device) {
  auto g = gated_m();
  g.epilogue.row_scale = fp32({64}, Device::cuda(1));
  EXPECT_EQ(invalid(g), "epilogue.row_scale: must be on out's device (cpu); got cuda:1");
}

TEST(ValidateEpilogue, swiglu_oss_alpha_is_finite) {
  auto g = gated_m(Activation::swiglu_oss);
  g.epilogue.alpha = std::numeric_limits<float>::infinity();
  EXPECT_EQ(invalid(g), "epilogue.alpha: must be finite; got inf");
  g.epilogue.alpha = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(invalid(g), "epilogue.alpha: must be finite; got nan");
}

TEST(ValidateEpilogue, swiglu_oss_limit_is_finite_and_positive) {
  auto g = gated_m(Activation::swiglu_oss);
  g.epilogue.limit = 0.0f;
  EXPECT_EQ(invalid(g), "epilogue.limit: must be finite and greater than 0; got 0");
  g.epilogue.limit = -1.5f;
  EXPECT_EQ(invalid(g), "epilogue.limit: must be finite and greater than 0; got -1.5");
  g.epilogue.limit = std::numeric_limits<float>::infinity();
  EXPECT_EQ(invalid(g), "epilogue.limit: must be finite and greater than 0; got inf");
}

TEST(ValidateEpilogue, alpha_and_limit_are_per_call_values_outside_the_structure) {
  auto g = gated_m(Activation::swiglu_oss);
  g.epilogue.limit = -1.0f;
  EXPECT_TRUE(validate_structure(g)) << "alpha and limit are not part of a layout";
  EXPECT_FALSE(validate(g));
  auto s = gated_m(Activation::swiglu);  // only swiglu_oss reads them
  s.epilogue.limit = -1.0f;
  EXPECT_TRUE(validate(s));
}

TEST(ValidateEpilogue, out_must_not_overlap_bias_or_row_scale) {
  std::vector<float> storage(64 * 16 + 64);
  auto g = make_grouped_m(4, 64, 16, 32);
  g.out = TensorDesc::contiguous(DType::fp32, {64, 16}, Device::cpu(), storage.data());
  g.epilogue.bias = TensorDesc::contiguous(DType::fp32, {4, 16}, Device::cpu(), storage.data() + 64);
  EXPECT_NE(invalid(g).find("out: must not overlap epilogue.bias in memory"), std::string::npos) << invalid(g);
  g.epilogue.bias.reset();
  g.epilogue.row_scale = TensorDesc::contiguous(DType::fp32, {64}, Device::cpu(), storage.data() + 64 * 16 - 1);
  EXPECT_NE(invalid(g).find("out: must not overlap epilogue.row_scale in memory"), std::string::npos);
  g.epilogue.row_scale->data = storage.data() + 64 * 16;
  EXPECT_TRUE(validate(g));
}

TEST(ValidateEpilogue, fake_bias_and_row_scale_are_fine_for_validation) {
  auto g = gated_m();
  g.epilogue.bias = fp32({4, 16});
  g.epilogue.row_scale = fp32({64});
  EXPECT_TRUE(validate(g));
  EXPECT_TRUE(problem_shape(g));
}

}  // namespace
}  // namespace gemmops
