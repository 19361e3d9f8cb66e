// tests/unit/test_epilogue_ops.cpp: the epilogue ops' names, their place in the signature, and the
// support answers (EpilogueSupport) that say which op an operator lacks
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/signature.hpp"
#include "gemmops/metadata.hpp"
#include "gemmops/registry.hpp"
#include "support/problems.hpp"

namespace gemmops {
namespace {

using testing::make_gemm;
using testing::make_grouped_m;

TEST(EpilogueNames, activations_and_gate_layouts_have_names_that_parse_back) {
  const std::vector<std::string> names = {"none", "silu", "gelu_tanh", "relu_squared", "swiglu", "swiglu_oss"};
  ASSERT_EQ(std::size(kAllActivations), names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(name(kAllActivations[i]), names[i]);
    EXPECT_EQ(parse_activation(names[i]), kAllActivations[i]);
  }
  EXPECT_EQ(name(GateLayout::concatenated), "concatenated");
  EXPECT_EQ(name(GateLayout::interleaved), "interleaved");
  EXPECT_EQ(parse_gate_layout("interleaved"), GateLayout::interleaved);
  EXPECT_EQ(parse_gate_layout("concatenated"), GateLayout::concatenated);
  EXPECT_FALSE(parse_activation("gelu"));
  EXPECT_FALSE(parse_activation("SwiGLU"));
  EXPECT_FALSE(parse_gate_layout(""));
}

TEST(EpilogueNames, only_swiglu_and_swiglu_oss_are_gated) {
  for (Activation a : kAllActivations)
    EXPECT_EQ(is_gated(a), a == Activation::swiglu || a == Activation::swiglu_oss) << name(a);
}

GroupedGemmArguments with_ops(Activation a, GateLayout layout = GateLayout::concatenated) {
  auto g = make_grouped_m(4, 64, 16, 32);
  if (is_gated(a)) g.out = TensorDesc::contiguous(DType::bf16, {64, 8});
  g.epilogue.activation = a;
  g.epilogue.gate_layout = layout;
  return g;
}

TEST(EpilogueSignature, differs_per_activation_and_gate_layout) {
  std::vector<detail::Signature> seen;
  for (Activation a : kAllActivations)
    for (GateLayout layout : kAllGateLayouts) {
      if (!is_gated(a) && layout != GateLayout::concatenated) continue;
      const detail::Signature s = detail::signature_of(with_ops(a, layout));
      ASSERT_TRUE(s.valid);
      for (const detail::Signature& other : seen) EXPECT_NE(s, other) << name(a) << " " << name(layout);
      seen.push_back(s);
    }
}

TEST(EpilogueSignature, differs_by_presence_and_dtype_of_bias_and_row_scale) {
  auto plain = with_ops(Activation::silu);
  auto fp32_bias = plain, bf16_bias = plain, scaled = plain;
  fp32_bias.epilogue.bias = TensorDesc::contiguous(DType::fp32, {4, 16});
  bf16_bias.epilogue.bias = TensorDesc::contiguous(DType::bf16, {4, 16});
  scaled.epilogue.row_scale = TensorDesc::contiguous(DType::fp32, {64});
  const std::vector<detail::Signature> s = {detail::signature_of(plain), detail::signature_of(fp32_bias),
                                            detail::signature_of(bf16_bias), detail::signature_of(scaled)};
  for (std::size_t i = 0; i < s.size(); ++i)
    for (std::size_t j = i + 1; j < s.size(); ++j) EXPECT_NE(s[i], s[j]) << i << " vs " << j;
  // Dense and batched forms carry the ops too.
  auto d = make_gemm(8, 8, 8), dr = d;
  dr.epilogue.activation = Activation::relu_squared;
  EXPECT_NE(detail::signature_of(d), detail::signature_of(dr));
}

TEST(EpilogueSignature, leaves_out_alpha_and_limit) {
  auto a = with_ops(Activation::swiglu_oss), b = a;
  b.epilogue.alpha = 1.0f;
  b.epilogue.limit = 3.0f;
  EXPECT_EQ(detail::signature_of(a), detail::signature_of(b));
}

std::string unsupported_by(const OperandConstraints& c, const Arguments& args) {
  Status s = check_constraints(c, args);
  EXPECT_EQ(s.code(), ErrorCode::unsupported) << s.to_string();
  return s.message();
}

TEST(EpilogueSupport, default_serves_only_the_empty_epilogue) {
  OperandConstraints c;
  EXPECT_TRUE(check_constraints(c, make_grouped_m(4, 64, 16, 32)));
  EXPECT_EQ(unsupported_by(c, with_ops(Activation::silu)), "epilogue: the operator has no silu op; it serves none");
  EXPECT_EQ(unsupported_by(c, with_ops(Activation::swiglu, GateLayout::interleaved)),
            "epilogue: the operator has no swiglu (interleaved) op; it serves none");
}

TEST(EpilogueSupport, a_gated_activation_needs_its_gate_layout) {
  OperandConstraints c;
  c.epilogue.activations = {Activation::swiglu};
  c.epilogue.gate_layouts = {GateLayout::concatenated};
  EXPECT_TRUE(check_constraints(c, with_ops(Activation::swiglu)));
  EXPECT_EQ(unsupported_by(c, with_ops(Activation::swiglu, GateLayout::interleaved)),
            "epilogue: the operator has no swiglu (interleaved) op; it serves none, swiglu (concatenated)");
  EXPECT_EQ(unsupported_by(c, with_ops(Activation::swiglu_oss)),
            "epilogue: the operator has no swiglu_oss (concatenated) op; it serves none, swiglu (concatenated)");
}

TEST(EpilogueSupport, bias_and_row_scale_are_declared_apart) {
  OperandConstraints c;
  c.epilogue.bias = true;
  auto g = make_grouped_m(4, 64, 16, 32);
  g.epilogue.bias = TensorDesc::contiguous(DType::fp32, {4, 16});
  EXPECT_TRUE(check_constraints(c, g));
  g.epilogue.row_scale = TensorDesc::contiguous(DType::fp32, {64});
  EXPECT_EQ(unsupported_by(c, g), "epilogue: the operator has no row_scale op; it serves none, bias");
  c.epilogue = {};
  c.epilogue.row_scale = true;
  EXPECT_EQ(unsupported_by(c, g), "epilogue: the operator has no bias op; it serves none, row_scale");
}

TEST(EpilogueSupport, all_serves_every_op) {
  OperandConstraints c;
  c.epilogue = EpilogueSupport::all();
  for (Activation a : kAllActivations)
    for (GateLayout layout : kAllGateLayouts) {
      auto g = with_ops(a, layout);
      g.epilogue.bias = TensorDesc::contiguous(DType::fp32, {4, 16});
      g.epilogue.row_scale = TensorDesc::contiguous(DType::fp32, {64});
      EXPECT_TRUE(check_constraints(c, g)) << name(a) << " " << name(layout);
    }
}

TEST(EpilogueSupport, rejections_name_the_operator_and_the_op_it_lacks) {
  auto g = testing::moe_forward(8, 1024, 512, 256);
  g.out = TensorDesc::contiguous(DType::bf16, {1024, 256}, Device::cuda(0));
  g.epilogue.activation = Activation::swiglu;
  g.epilogue.gate_layout = GateLayout::interleaved;
  int named = 0;
  for (const Rejection& r : get_rejections(g, Target::sm(90, true))) {
    if (r.op->metadata().provider != "sm90") continue;
    // Operators for other dtypes say so first; the rest name the op they lack.
    if (r.reason.message().rfind("epilogue:", 0) != 0) continue;
    ++named;
    // The 192-wide designs store no gated halves (64-column boxes of a 96-column output tile).
    EXPECT_EQ(r.op->metadata().design.tile_n, 192) << r.op->name();
    // (every design writes the pre-activation: the TMA store's through its staging ring)
    EXPECT_EQ(r.reason.message(), "epilogue: " + r.op->name() +
                                      " has no swiglu (interleaved) op; it serves none, silu, gelu_tanh, "
                                      "relu_squared, bias, row_scale, pre_activation");
  }
  EXPECT_GT(named, 0);
  const std::vector<OperatorPtr> serving = get_operators(g, Target::sm(90, true));
  ASSERT_FALSE(serving.empty());
  EXPECT_EQ(serving.front()->metadata().provider, "sm90") << serving.front()->name();
  // The CPU operator serves every op.
  auto h = with_ops(Activation::swiglu_oss, GateLayout::interleaved);
  const std::vector<OperatorPtr> ops = get_operators(h, Target::cpu());
  ASSERT_FALSE(ops.empty());
  EXPECT_EQ(ops[0]->name(), "cpu_grouped_gemm_m");
}

TEST(EpilogueSupport, the_cpu_operators_declare_every_op) {
  for (const OperatorPtr& op : default_registry().all()) {
    if (op->metadata().provider != "cpu") continue;
    EXPECT_EQ(op->metadata().constraints.epilogue, EpilogueSupport::all()) << op->name();
  }
}

}  // namespace
}  // namespace gemmops
