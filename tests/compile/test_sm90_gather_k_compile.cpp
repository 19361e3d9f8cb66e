// tests/compile/test_sm90_gather_k_compile.cpp: the K-grouped sm90 kernels with operands gathered
// along K (KernelConfig::gather_a with an M-major A, gather_b with an N-major B) compile with NVRTC
// for sm_90a, keep wgmma asynchronous and spill nothing, on every design that serves them; the
// designs that cannot refuse them with a reason
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
#include "sm90/kernel_compile.hpp"
#include "sm90/kernel_config.hpp"
#include "support/ptxas_log.hpp"
#include "support/scoped_env.hpp"
#include "support/sm90_operators.hpp"

namespace gemmops {
namespace {

using sm90::Sm90Design;
using testing::expect_clean_compile;

/// Which operands a case gathers: A (the MoE's dW1: x's token rows), B (dW2: dout's), or both.
enum class Gathered { a, b, both };

struct GatherKCase {
  const Sm90Design* design;
  Gathered gathered;
  std::string label;
};

// Both operands MN-major, as the MoE weight gradients have them (A = a'^T or x^T, B = dout or dh).
sm90::KernelConfig gathered_k(const Sm90Design& d, Gathered g) {
  return sm90::make_kernel_config(d, DType::bf16, DType::bf16, Major::mn, Major::mn, true, {},
                                  g != Gathered::b, g != Gathered::a);
}

std::vector<GatherKCase> cases() {
  std::vector<GatherKCase> out;
  for (const Sm90Design& d : sm90::sm90_designs()) {
    if (d.design.cluster_n > 1) continue;  // no K-grouped form (sm90::cluster_n_refusal)
    for (Gathered g : {Gathered::a, Gathered::b, Gathered::both}) {
      if (!sm90::gather_k_refusal(gathered_k(d, g)).empty()) continue;
      const std::string label = testing::test_label(d.design.to_string() + (g == Gathered::a ? "_a" : g == Gathered::b ? "_b" : "_ab"));
      out.push_back({&d, g, label});
    }
  }
  return out;
}

void PrintTo(const GatherKCase& c, std::ostream* os) { *os << c.label; }

class Sm90GatherKCompile : public ::testing::TestWithParam<GatherKCase> {};

TEST_P(Sm90GatherKCompile, compiles_spill_free_with_wgmma_asynchronous) {
  if (auto api = jit::nvrtc(); !api) GTEST_SKIP() << api.status().message();
  const GatherKCase& c = GetParam();
  const sm90::KernelConfig config = gathered_k(*c.design, c.gathered);
  jit::CompileRequest req = sm90::make_compile_request("sm90_gather_k_" + c.label, config, Target::sm(90, true));
  ASSERT_EQ(req.name_expressions.size(), 1u);  // K-grouped: no split-K twin
  expect_clean_compile(std::move(req), c.label);
}

INSTANTIATE_TEST_SUITE_P(Sm90, Sm90GatherKCompile, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<GatherKCase>& info) { return info.param.label; });

TEST(Sm90GatherKSupport, every_k_grouped_design_gathers_a_and_designs_without_a_cluster_gather_b) {
  int a = 0, b = 0;
  for (const Sm90Design& d : sm90::sm90_designs()) {
    if (d.design.cluster_n > 1) continue;  // no K-grouped form (sm90::cluster_n_refusal)
    const sm90::KernelConfig c = gathered_k(d, Gathered::a);
    const std::string why_a = sm90::gather_k_refusal(c), why_b = sm90::gather_k_refusal(gathered_k(d, Gathered::b));
    EXPECT_EQ(why_a.empty(), !c.wide_accumulators()) << d.design.to_string() << ": " << why_a;
    EXPECT_EQ(why_b.empty(), !c.wide_accumulators() && c.cluster_m == 1) << d.design.to_string() << ": " << why_b;
    if (!why_a.empty()) {
      EXPECT_EQ(why_a.rfind("a_k_index: ", 0), 0u) << why_a;
    }
    if (!why_b.empty()) {
      EXPECT_EQ(why_b.rfind("b_k_index: ", 0), 0u) << why_b;
    }
    a += why_a.empty();
    b += why_b.empty();
  }
  EXPECT_GE(a, 1);
  EXPECT_GE(b, 1);
}

TEST(Sm90GatherKSupport, k_major_operands_and_the_m_grouped_form_are_refused_with_the_rule) {
  const Sm90Design* plain = nullptr;
  for (const Sm90Design& d : sm90::sm90_designs())
    if (!gathered_k(d, Gathered::a).wide_accumulators() && d.design.cluster_m == 1) plain = &d;
  ASSERT_NE(plain, nullptr);
  const auto a_k = sm90::make_kernel_config(*plain, DType::bf16, DType::bf16, Major::k, Major::mn, true, {}, true);
  EXPECT_NE(sm90::gather_k_refusal(a_k).find("M-major A only"), std::string::npos);
  const auto b_k = sm90::make_kernel_config(*plain, DType::bf16, DType::bf16, Major::mn, Major::k, true, {}, false, true);
  EXPECT_NE(sm90::gather_k_refusal(b_k).find("N-major B only"), std::string::npos);
}

TEST(Sm90GatherKSupport, the_gathered_kernels_have_their_own_text_and_cache_key) {
  const Sm90Design& d = sm90::sm90_designs()[0];
  const std::string plain = sm90::instantiation_text(sm90::make_kernel_config(d, DType::bf16, DType::bf16, Major::mn,
                                                                                Major::mn, true));
  const std::string a = sm90::instantiation_text(gathered_k(d, Gathered::a));
  const std::string b = sm90::instantiation_text(gathered_k(d, Gathered::b));
  const std::string ab = sm90::instantiation_text(gathered_k(d, Gathered::both));
  EXPECT_EQ(plain.find("gather_"), std::string::npos) << plain;
  const std::string stem = plain.substr(0, plain.size() - 2);
  EXPECT_EQ(a, stem + ", .gather_a = true}>");
  EXPECT_EQ(b, stem + ", .gather_b = true}>");
  EXPECT_EQ(ab, stem + ", .gather_a = true, .gather_b = true}>");
}

TEST(Sm90GatherKSupport, an_operator_compiles_the_gathered_kernel_for_arguments_with_k_indices) {
  // Through the operator (plan, config, artifact) with the trial opt-in, on fake tensors: the
  // MoE's dW2 (B = dout rows gathered by token) on 512 pairs of 4 experts, 300 tokens.
  testing::ScopedEnv trial{{"GEMMOPS_TRIAL_DESIGNS", "1"}};
  const Device cuda = Device::cuda(0);
  TensorDesc a = TensorDesc::contiguous(DType::bf16, {512, 128}, cuda);  // a' (S, I): A = a'^T, M-major
  a.shape = {128, 512};
  a.strides = {1, 128};
  GroupedGemmArguments g{a, TensorDesc::contiguous(DType::bf16, {300, 256}, cuda),
                         TensorDesc::contiguous(DType::bf16, {4, 128, 256}, cuda), DType::fp32,
                         TensorDesc::contiguous(DType::i32, {4}, cuda)};
  g.b_k_index = TensorDesc::contiguous(DType::i32, {512}, cuda);
  int compiled = 0;
  for (const OperatorPtr& op : testing::sm90_operators()) {
    const auto& c = op->metadata().constraints;
    if (c.a_dtypes[0] != DType::bf16 || c.out_dtypes[0] != DType::bf16) continue;
    if (op->metadata().design.to_string() != "128x128x64_c1x1_s6_pingpong") continue;
    const Status s = op->supports(g);
    ASSERT_TRUE(s) << s.to_string();
    auto artifact = op->compile(g);
    ASSERT_TRUE(artifact) << artifact.status().to_string();
    EXPECT_NE(artifact->description().find(".gather_b = true"), std::string::npos) << artifact->description();
    EXPECT_EQ(artifact->description().find("spilled"), std::string::npos) << artifact->description();
    ++compiled;
  }
  EXPECT_EQ(compiled, 1);
}

}  // namespace
}  // namespace gemmops
