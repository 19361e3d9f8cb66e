// tests/compile/test_sm90_gather_compile.cpp: the sm90 kernels with a gathered A (KernelConfig::gather_a)
// compile with NVRTC for sm_90a, keep wgmma asynchronous and spill nothing, on every design that
// serves it; the designs that cannot give the producer registers refuse it with a reason
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
#include "sm90/kernel_config.hpp"
#include "support/ptxas_log.hpp"
#include "support/scoped_env.hpp"
#include "support/sm90_operators.hpp"

namespace gemmops {
namespace {

using sm90::Sm90Design;
using testing::expect_clean_compile;

/// One gathered kernel: a design and B's major (bf16 in and out).
struct GatherCase {
  const Sm90Design* design;
  Major b_major;
  std::string label;
};

sm90::KernelConfig gathered(const Sm90Design& d, Major b_major) {
  return sm90::make_kernel_config(d, DType::bf16, DType::bf16, Major::k, b_major, false, {}, true);
}

std::vector<GatherCase> cases() {
  std::vector<GatherCase> out;
  for (const Sm90Design& d : sm90::sm90_designs()) {
    if (!sm90::gather_a_refusal(gathered(d, Major::k)).empty()) continue;
    for (Major b : {Major::k, Major::mn}) {
      const std::string label = testing::test_label(d.design.to_string() + (b == Major::mn ? "_bn" : ""));
      out.push_back({&d, b, label});
    }
  }
  return out;
}

void PrintTo(const GatherCase& c, std::ostream* os) { *os << c.label; }

class Sm90GatherCompile : public ::testing::TestWithParam<GatherCase> {};

TEST_P(Sm90GatherCompile, compiles_spill_free_with_wgmma_asynchronous) {
  if (auto api = jit::nvrtc(); !api) GTEST_SKIP() << api.status().message();
  const GatherCase& c = GetParam();
  const sm90::KernelConfig config = gathered(*c.design, c.b_major);
  jit::CompileRequest req = sm90::make_compile_request("sm90_gather_" + c.label, config, Target::sm(90, true));
  ASSERT_EQ(req.name_expressions.size(), 1u);  // no split-K twin with a gathered A
  EXPECT_NE(req.name_expressions[0].find(".gather_a = true"), std::string::npos) << req.name_expressions[0];
  expect_clean_compile(std::move(req), c.label);
}

INSTANTIATE_TEST_SUITE_P(Sm90, Sm90GatherCompile, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<GatherCase>& info) { return info.param.label; });

// The MoE layer's up projection as it runs: x's rows gathered, SwiGLU (concatenated halves) storing
// the pre-activation too, on every design that serves that op and a gathered A.
TEST(Sm90GatherCompile, the_moe_up_projection_compiles_spill_free_on_every_design_serving_it) {
  if (auto api = jit::nvrtc(); !api) GTEST_SKIP() << api.status().message();
  EpilogueOps ops;
  ops.activation = Activation::swiglu;
  ops.gate_layout = GateLayout::concatenated;
  ops.pre_activation = TensorDesc::contiguous(DType::bf16, {512, 512}, Device::cuda(0));
  int compiled = 0;
  for (const Sm90Design& d : sm90::sm90_designs()) {
    const sm90::KernelConfig c =
        sm90::make_kernel_config(d, DType::bf16, DType::bf16, Major::k, Major::k, false, sm90::kernel_op(ops), true);
    if (!sm90::gather_a_refusal(c).empty() || !sm90::check_design_epilogue(d, ops).empty()) continue;
    const std::string label = testing::test_label("up_" + d.design.to_string());
    expect_clean_compile(sm90::make_compile_request("sm90_gather_" + label, c, Target::sm(90, true)), label);
    ++compiled;
  }
  EXPECT_GT(compiled, 3);
}

// The down projection's data gradient as the step runs it: dout's rows gathered, SwiGLU's backward
// with the scores (activation_grad: h read, dh and s act(h) written, score partials), every design
// serving that op and a gathered A.
TEST(Sm90GatherCompile, the_moe_down_dgrad_compiles_spill_free_on_every_design_serving_it) {
  if (auto api = jit::nvrtc(); !api) GTEST_SKIP() << api.status().message();
  const Device cuda = Device::cuda(0);
  EpilogueOps ops;
  ops.activation = Activation::swiglu;
  ops.gate_layout = GateLayout::concatenated;
  ops.row_scale = TensorDesc::contiguous(DType::fp32, {512}, cuda);
  ops.activation_grad = ActivationGrad{TensorDesc::contiguous(DType::bf16, {512, 512}, cuda),
                                       TensorDesc::contiguous(DType::bf16, {512, 256}, cuda),
                                       TensorDesc::contiguous(DType::fp32, {512, 4}, cuda)};
  int compiled = 0;
  for (const Sm90Design& d : sm90::sm90_designs()) {
    const sm90::KernelConfig c =
        sm90::make_kernel_config(d, DType::bf16, DType::bf16, Major::k, Major::mn, false, sm90::kernel_op(ops), true);
    if (!sm90::gather_a_refusal(c).empty() || !sm90::check_design_epilogue(d, ops).empty()) continue;
    const std::string label = testing::test_label("dgated_" + d.design.to_string());
    expect_clean_compile(sm90::make_compile_request("sm90_gather_" + label, c, Target::sm(90, true)), label);
    ++compiled;
  }
  EXPECT_GT(compiled, 3);
}

TEST(Sm90GatherSupport, designs_with_wide_accumulators_or_256_row_tiles_refuse_and_every_other_design_serves_it) {
  int refused = 0;
  for (const Sm90Design& d : sm90::sm90_designs()) {
    const std::string why = sm90::gather_a_refusal(gathered(d, Major::k));
    const sm90::KernelConfig c = gathered(d, Major::k);
    EXPECT_EQ(why.empty(), !c.wide_accumulators() && c.tile_m <= 128) << d.design.to_string() << ": " << why;
    if (!why.empty()) {
      ++refused;
      EXPECT_NE(why.find("to gather A's rows"), std::string::npos) << why;
    }
  }
  EXPECT_GE(refused, 1);
}

TEST(Sm90GatherSupport, the_gathered_kernel_has_its_own_text_and_cache_key) {
  const Sm90Design& d = sm90::sm90_designs()[0];
  const std::string plain = sm90::instantiation_text(sm90::make_kernel_config(d, DType::bf16, DType::bf16, Major::k,
                                                                                Major::k, false));
  const std::string gather = sm90::instantiation_text(gathered(d, Major::k));
  EXPECT_EQ(plain.find("gather_a"), std::string::npos) << plain;
  EXPECT_EQ(gather, plain.substr(0, plain.size() - 2) + ", .gather_a = true}>");
}

TEST(Sm90GatherSupport, an_operator_compiles_the_gathered_kernel_for_arguments_with_a_row_index) {
  // Through the operator (plan, config, artifact) with the trial opt-in, on fake tensors.
  testing::ScopedEnv trial{{"GEMMOPS_TRIAL_DESIGNS", "1"}};
  const Device cuda = Device::cuda(0);
  GroupedGemmArguments g{TensorDesc::contiguous(DType::bf16, {300, 128}, cuda),
                         TensorDesc::contiguous(DType::bf16, {4, 128, 256}, cuda),
                         TensorDesc::contiguous(DType::bf16, {512, 256}, cuda), DType::fp32,
                         TensorDesc::contiguous(DType::i32, {4}, cuda)};
  g.a_row_index = TensorDesc::contiguous(DType::i32, {512}, cuda);
  int compiled = 0;
  for (const OperatorPtr& op : testing::sm90_operators()) {
    const auto& c = op->metadata().constraints;
    if (c.a_dtypes[0] != DType::bf16 || c.out_dtypes[0] != DType::bf16) continue;
    if (op->metadata().design.to_string() != "128x128x64_c1x1_s6_pingpong") continue;
    const Status s = op->supports(g);
    ASSERT_TRUE(s) << s.to_string();
    EXPECT_EQ(op->workspace_size(g), 0u);  // never split K
    auto artifact = op->compile(g);
    ASSERT_TRUE(artifact) << artifact.status().to_string();
    EXPECT_NE(artifact->description().find(".gather_a = true"), std::string::npos) << artifact->description();
    EXPECT_EQ(artifact->description().find("spilled"), std::string::npos) << artifact->description();
    ++compiled;
  }
  EXPECT_EQ(compiled, 1);
}

}  // namespace
}  // namespace gemmops
