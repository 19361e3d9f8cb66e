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

/// Compiles the gathered-A kernel with `ops` on every design serving both (spill-free, wgmma
/// asynchronous); how many there were.
int compile_gathered_with_ops_on_every_design(const EpilogueOps& ops, Major b_major, const std::string& prefix) {
  int compiled = 0;
  for (const Sm90Design& d : sm90::sm90_designs()) {
    const sm90::KernelConfig c =
        sm90::make_kernel_config(d, DType::bf16, DType::bf16, Major::k, b_major, false, sm90::kernel_op(ops), true);
    if (!sm90::gather_a_refusal(c).empty() || !sm90::check_design_epilogue(d, ops).empty()) continue;
    const std::string label = testing::test_label(prefix + d.design.to_string());
    expect_clean_compile(sm90::make_compile_request("sm90_gather_" + label, c, Target::sm(90, true)), label);
    ++compiled;
  }
  return compiled;
}

// The MoE layer's up projection as it runs: x's rows gathered, SwiGLU (concatenated halves) storing
// the pre-activation too, on every design that serves that op and a gathered A.
TEST(Sm90GatherCompile, the_moe_up_projection_compiles_spill_free_on_every_design_serving_it) {
  if (auto api = jit::nvrtc(); !api) GTEST_SKIP() << api.status().message();
  EpilogueOps ops;
  ops.activation = Activation::swiglu;
  ops.gate_layout = GateLayout::concatenated;
  ops.pre_activation = TensorDesc::contiguous(DType::bf16, {512, 512}, Device::cuda(0));
  EXPECT_GT(compile_gathered_with_ops_on_every_design(ops, Major::k, "up_"), 3);
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
  EXPECT_GT(compile_gathered_with_ops_on_every_design(ops, Major::mn, "dgated_"), 3);
}

}  // namespace
}  // namespace gemmops
