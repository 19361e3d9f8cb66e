// tests/compile/test_sm90_epilogue_outputs_compile.cpp: the sm90 kernels with the epilogue's second
// operands (the forward's pre_activation, the gated activation's backward activation_grad) compile
// with NVRTC for sm_90a, keep wgmma asynchronous and spill nothing, on every design that declares
// them (ptxas's register count printed for the record)
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "gemmops/gemmops.hpp"
#include "jit/compile.hpp"
#include "jit/nvrtc_api.hpp"
#include "sm90/designs.hpp"
#include "sm90/epilogue_support.hpp"
#include "sm90/kernel_compile.hpp"
#include "support/ptxas_log.hpp"

namespace gemmops {
namespace {

using sm90::Sm90Design;

TensorDesc fake(DType t, std::vector<int64_t> shape) { return TensorDesc::contiguous(t, shape, Device::cuda(0)); }

struct OutputsCase {
  const Sm90Design* design;
  DType out;
  EpilogueOps ops;
  std::string label;
};

// The backward over dA (TotalM 512, I 256): h (512, 512; plain: 256), s act(h) (512, 256), partials (512, 4).
EpilogueOps grad_ops(Activation a, GateLayout g, DType out, bool scores) {
  EpilogueOps ops;
  ops.activation = a;
  ops.gate_layout = g;
  ops.activation_grad = ActivationGrad{fake(out, {512, is_gated(a) ? 512 : 256}), fake(out, {512, 256}),
                                       fake(DType::fp32, {512, 4})};
  if (scores) ops.row_scale = fake(DType::fp32, {512});
  return ops;
}

// The forward keeping its pre-activation (TotalM 512, N 512).
EpilogueOps pre_ops(Activation a, GateLayout g, DType out, bool bias) {
  EpilogueOps ops;
  ops.activation = a;
  ops.gate_layout = g;
  ops.pre_activation = fake(out, {512, 512});
  if (bias) ops.bias = fake(out, {4, 512});
  return ops;
}

std::string label(const Sm90Design& d, DType out, const EpilogueOps& ops) {
  std::string s = d.design.to_string() + "_out_" + std::string(name(out)) +
                  (ops.activation_grad ? "_grad_" : "_pre_") + std::string(name(ops.activation));
  if (is_gated(ops.activation)) s += ops.gate_layout == GateLayout::interleaved ? "_interleaved" : "_concatenated";
  if (ops.bias) s += "_bias";
  if (ops.row_scale) s += "_scores";
  return testing::test_label(s);
}

// Every design that serves them: the backward (swiglu, concatenated, with scores) and the forward
// (swiglu, concatenated, bias); on one ping-pong and one cooperative design the other activation and
// layout and an fp32 out too.
std::vector<OutputsCase> cases() {
  std::vector<OutputsCase> out;
  auto add = [&](const Sm90Design& d, DType o, EpilogueOps ops) { out.push_back({&d, o, ops, label(d, o, ops)}); };
  for (const Sm90Design& d : sm90::sm90_designs()) {
    const EpilogueOps grad = grad_ops(Activation::swiglu, GateLayout::concatenated, DType::bf16, true);
    if (!sm90::check_design_epilogue(d, grad).empty()) {
      // The 192-wide direct-store designs keep the pre-activation of the plain activations.
      const EpilogueOps pre = pre_ops(Activation::silu, GateLayout::concatenated, DType::bf16, true);
      if (sm90::check_design_epilogue(d, pre).empty()) {
        add(d, DType::bf16, pre);
        add(d, DType::bf16, pre_ops(Activation::relu_squared, GateLayout::concatenated, DType::bf16, false));
      }
      // ... and SwiGLU's, in 96-column halves (the TMA-store designs: in 64-column boxes of each half).
      const EpilogueOps gated_pre = pre_ops(Activation::swiglu, GateLayout::concatenated, DType::bf16, true);
      if (sm90::check_design_epilogue(d, gated_pre).empty()) add(d, DType::bf16, gated_pre);
      // The TMA store's interleaved halves: one plane of N columns.
      if (d.design.to_string() == "128x256x64_c1x1_s4_coop_tma_ring2")
        add(d, DType::bf16, pre_ops(Activation::swiglu_oss, GateLayout::interleaved, DType::bf16, false));
      continue;
    }
    add(d, DType::bf16, grad);
    add(d, DType::bf16, pre_ops(Activation::swiglu, GateLayout::concatenated, DType::bf16, true));
    const std::string n = d.design.to_string();
    if (n == "128x128x64_c1x1_s4_pingpong_tma" || n == "128x256x64_c2x1_s3_coop_tma") {
      // The TMA store's backward: interleaved dh (two boxes of 128 columns), the plain activations (two
      // boxes a chunk), fp16.
      add(d, DType::bf16, grad_ops(Activation::swiglu_oss, GateLayout::interleaved, DType::bf16, true));
      add(d, DType::fp16, grad_ops(Activation::swiglu_oss, GateLayout::concatenated, DType::fp16, false));
      add(d, DType::bf16, grad_ops(Activation::silu, GateLayout::concatenated, DType::bf16, true));
      add(d, DType::bf16, grad_ops(Activation::relu_squared, GateLayout::concatenated, DType::bf16, false));
    }
    if (n != "128x128x64_c1x1_s6_pingpong" && n != "128x256x64_c1x1_s4_coop") continue;
    add(d, DType::bf16, grad_ops(Activation::swiglu_oss, GateLayout::interleaved, DType::bf16, true));
    add(d, DType::fp16, grad_ops(Activation::swiglu_oss, GateLayout::concatenated, DType::fp16, false));
    add(d, DType::fp32, grad_ops(Activation::swiglu, GateLayout::interleaved, DType::fp32, true));
    add(d, DType::bf16, pre_ops(Activation::swiglu_oss, GateLayout::interleaved, DType::bf16, false));
    add(d, DType::bf16, pre_ops(Activation::silu, GateLayout::concatenated, DType::bf16, true));
    for (Activation a : {Activation::silu, Activation::gelu_tanh, Activation::relu_squared})
      add(d, DType::bf16, grad_ops(a, GateLayout::concatenated, DType::bf16, true));
  }
  return out;
}

void PrintTo(const OutputsCase& c, std::ostream* os) { *os << c.label; }

class Sm90EpilogueOutputsCompile : public ::testing::TestWithParam<OutputsCase> {};

TEST_P(Sm90EpilogueOutputsCompile, compiles_spill_free_with_wgmma_asynchronous) {
  if (auto api = jit::nvrtc(); !api) GTEST_SKIP() << api.status().message();
  const OutputsCase& c = GetParam();
  ASSERT_EQ(sm90::check_design_epilogue(*c.design, c.ops), "");
  jit::CompileRequest req =
      sm90::make_compile_request(*c.design, DType::bf16, c.out, Major::k, c.ops, Target::sm(90, true));
  ASSERT_EQ(req.name_expressions.size(), 1u);
  EXPECT_NE(req.name_expressions[0].find(c.ops.activation_grad ? ".activation_grad = true" : ".pre_activation = true"),
            std::string::npos)
      << req.name_expressions[0];
  testing::expect_clean_compile(std::move(req), c.label);
}

INSTANTIATE_TEST_SUITE_P(Sm90, Sm90EpilogueOutputsCompile, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<OutputsCase>& info) { return info.param.label; });

}  // namespace
}  // namespace gemmops
