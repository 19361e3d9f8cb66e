// tests/compile/test_sm90_epilogue_compile.cpp: the sm90 kernels with fused epilogue ops compile with
// NVRTC for sm_90a, keep wgmma asynchronous and spill nothing: every design with a bias, a row scale
// and a gated (or, where the design serves none, a plain) activation; every activation on a
// direct-store and a TMA-store design; and which ops each design declares
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "gemmops/gemmops.hpp"
#include "jit/compile.hpp"
#include "jit/nvrtc_api.hpp"
#include "sm90/designs.hpp"
#include "sm90/epilogue_support.hpp"
#include "sm90/kernel_compile.hpp"

namespace gemmops {
namespace {

using sm90::Sm90Design;

/// One kernel to compile: a design, out's dtype, B's major and the ops.
struct EpilogueCase {
  const Sm90Design* design;
  DType out;
  Major b_major;
  EpilogueOps ops;
  std::string label;
};

TensorDesc fake(DType t, std::vector<int64_t> shape) { return TensorDesc::contiguous(t, shape, Device::cuda(0)); }

EpilogueOps make_ops(Activation a, GateLayout g, std::optional<DType> bias, bool row_scale) {
  EpilogueOps ops;
  ops.activation = a;
  ops.gate_layout = g;
  if (bias) ops.bias = fake(*bias, {4, 512});
  if (row_scale) ops.row_scale = fake(DType::fp32, {512});
  return ops;
}

std::string label(const Sm90Design& d, DType out, Major b_major, const EpilogueOps& ops) {
  std::string s = d.design.to_string() + "_out_" + std::string(name(out)) + (b_major == Major::mn ? "_bn" : "") + "_" +
                  std::string(name(ops.activation));
  if (is_gated(ops.activation)) s += ops.gate_layout == GateLayout::interleaved ? "_interleaved" : "_concatenated";
  if (ops.bias) s += "_bias_" + std::string(name(ops.bias->dtype));
  if (ops.row_scale) s += "_row_scale";
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

bool is_design(const Sm90Design& d, const std::string& name) { return d.design.to_string() == name; }

// Every design with a bias (out's dtype), a row scale and SwiGLU (concatenated halves), or SiLU where
// the design serves no gated op; every activation on a direct-store and a TMA-store design (with
// both gate layouts, an fp32 bias, and an fp32 out on the direct store); an N-major B's halves.
std::vector<EpilogueCase> cases() {
  std::vector<EpilogueCase> out;
  auto add = [&](const Sm90Design& d, DType o, Major b, EpilogueOps ops) {
    out.push_back({&d, o, b, ops, label(d, o, b, ops)});
  };
  for (const Sm90Design& d : sm90::sm90_designs()) {
    const EpilogueOps gated = make_ops(Activation::swiglu, GateLayout::concatenated, DType::bf16, true);
    const EpilogueOps plain = make_ops(Activation::silu, GateLayout::concatenated, DType::bf16, true);
    if (sm90::check_design_epilogue(d, gated).empty()) {
      add(d, DType::bf16, Major::k, gated);
    } else if (sm90::check_design_epilogue(d, plain).empty()) {
      add(d, DType::bf16, Major::k, plain);
      // The designs with the most accumulators a thread: every plain activation.
      for (Activation a : {Activation::gelu_tanh, Activation::relu_squared})
        add(d, DType::bf16, Major::k, make_ops(a, GateLayout::concatenated, DType::fp32, true));
    }
  }
  for (const Sm90Design& d : sm90::sm90_designs()) {
    const bool direct = is_design(d, "128x128x64_c1x1_s6_pingpong");
    const bool tma = is_design(d, "128x256x64_c2x1_s4_coop_tma_ring2");
    if (!direct && !tma) continue;
    for (Activation a : {Activation::silu, Activation::gelu_tanh, Activation::relu_squared})
      add(d, DType::bf16, Major::k, make_ops(a, GateLayout::concatenated, {}, false));
    add(d, DType::fp16, Major::k, make_ops(Activation::none, GateLayout::concatenated, DType::fp32, false));
    add(d, DType::bf16, Major::k, make_ops(Activation::swiglu, GateLayout::interleaved, DType::fp32, true));
    add(d, DType::bf16, Major::k, make_ops(Activation::swiglu_oss, GateLayout::interleaved, {}, false));
    add(d, DType::bf16, Major::mn, make_ops(Activation::swiglu_oss, GateLayout::concatenated, DType::bf16, true));
    if (direct) add(d, DType::fp32, Major::k, make_ops(Activation::swiglu, GateLayout::concatenated, DType::fp32, true));
  }
  return out;
}

void PrintTo(const EpilogueCase& c, std::ostream* os) { *os << c.label; }

class Sm90EpilogueCompile : public ::testing::TestWithParam<EpilogueCase> {};

TEST_P(Sm90EpilogueCompile, compiles_spill_free_with_wgmma_asynchronous) {
  if (auto api = jit::nvrtc(); !api) GTEST_SKIP() << api.status().message();
  const EpilogueCase& c = GetParam();
  ASSERT_EQ(sm90::check_design_epilogue(*c.design, c.ops), "");
  const jit::CompileRequest req =
      sm90::make_compile_request(*c.design, DType::bf16, c.out, c.b_major, c.ops, Target::sm(90, true));
  ASSERT_EQ(req.name_expressions.size(), 1u);  // no split-K twin: ops never split K
  EXPECT_NE(req.name_expressions[0].find(".op = "), std::string::npos) << req.name_expressions[0];
  // Uncached: a cubin from the disk cache comes without ptxas's log.
  auto key = jit::cache_key(req);
  ASSERT_TRUE(key) << key.status().to_string();
  auto compiled = jit::compile_uncached(req, *key);
  ASSERT_TRUE(compiled) << compiled.status().to_string();
  EXPECT_EQ(compiled->lowered_names.size(), 1u);
  EXPECT_EQ(compiled->log.find("wgmma.mma_async instructions are serialized"), std::string::npos) << compiled->log;
  if (std::getenv("GEMMOPS_KERNEL_WATCHDOG") == nullptr) {
    EXPECT_EQ(compiled->log.find("spilled"), std::string::npos) << compiled->log;
  }
}

INSTANTIATE_TEST_SUITE_P(Sm90, Sm90EpilogueCompile, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<EpilogueCase>& info) { return info.param.label; });

TEST(Sm90EpilogueSupport, the_identity_op_keeps_the_kernel_text_and_every_op_changes_it) {
  const Sm90Design& d = sm90::sm90_designs()[0];
  const Target t = Target::sm(90, true);
  const std::string identity = sm90::make_compile_request(d, DType::bf16, DType::bf16, Major::k, {}, t).name_expressions[0];
  EXPECT_EQ(identity.find(".op"), std::string::npos) << identity;
  std::vector<std::string> texts{identity};
  for (const EpilogueOps& ops :
       {make_ops(Activation::silu, {}, {}, false), make_ops(Activation::none, {}, DType::fp32, false),
        make_ops(Activation::none, {}, DType::bf16, false), make_ops(Activation::none, {}, {}, true),
        make_ops(Activation::swiglu, GateLayout::concatenated, {}, false),
        make_ops(Activation::swiglu, GateLayout::interleaved, {}, false)}) {
    const std::string text = sm90::make_compile_request(d, DType::bf16, DType::bf16, Major::k, ops, t).name_expressions[0];
    for (const std::string& seen : texts) EXPECT_NE(text, seen);
    texts.push_back(text);
  }
}

TEST(Sm90EpilogueSupport, each_design_declares_what_it_serves_and_refuses_the_rest_with_a_reason) {
  int gated = 0, plain_only = 0, none = 0;
  for (const Sm90Design& d : sm90::sm90_designs()) {
    SCOPED_TRACE(d.design.to_string());
    const sm90::Sm90EpilogueSupport s = sm90::epilogue_support(d, DType::bf16);
    auto lists = [&](Activation a) { return std::find(s.activations.begin(), s.activations.end(), a) != s.activations.end(); };
    // What the support lists and what the check admits agree, op by op.
    for (Activation a : kAllActivations) {
      const std::string why = sm90::check_design_epilogue(d, make_ops(a, {}, {}, false));
      EXPECT_EQ(why.empty(), lists(a)) << why;
    }
    EXPECT_EQ(sm90::check_design_epilogue(d, make_ops(Activation::none, {}, DType::fp32, false)).empty(),
              !s.bias_dtypes.empty());
    EXPECT_EQ(sm90::check_design_epilogue(d, make_ops(Activation::none, {}, {}, true)).empty(), s.row_scale);
    EXPECT_EQ(sm90::check_design_epilogue(d, EpilogueOps{}), "");  // the identity, everywhere
    const std::string why_gated = sm90::check_design_epilogue(d, make_ops(Activation::swiglu_oss, {}, {}, false));
    if (lists(Activation::swiglu_oss)) {
      // 64-column TMA boxes of each half, or the direct store's 32 columns at a time (192 wide).
      EXPECT_TRUE(d.design.tile_n % 128 == 0 || (d.design.tile_n == 192 && d.design.epilogue != Epilogue::tma_store));
      EXPECT_EQ(s.bias_dtypes, (std::vector<DType>{DType::fp32, DType::bf16}));
      EXPECT_TRUE(s.row_scale);
      ++gated;
    } else if (lists(Activation::silu)) {
      EXPECT_NE(why_gated.find("needs a tile width of 128 or 256"), std::string::npos) << why_gated;
      EXPECT_NE(why_gated.find(d.design.to_string()), std::string::npos) << why_gated;
      ++plain_only;
    } else {
      EXPECT_NE(why_gated.find("serves no epilogue ops"), std::string::npos) << why_gated;
      EXPECT_TRUE(s.kinds.empty());
      ++none;
    }
  }
  EXPECT_GT(gated, 0);
  EXPECT_GT(plain_only, 0);
  // No registered TMA-store design holds more than 128 accumulators a thread (the 128x192 ping-pong
  // ones, which did, spilled and are not registered).
  EXPECT_EQ(none, 0);
}

TEST(Sm90EpilogueSupport, the_arguments_rules_refuse_with_a_reason) {
  // The rules on the arguments beside the design's: the form, the bias and row-scale dtypes, and
  // where an N-major B's up half starts. (A problem as map_problem() makes it, without data.)
  const Sm90Design& d = sm90::sm90_designs()[0];  // 128x256: serves every op
  const TensorDesc b = fake(DType::bf16, {4, 128, 512});
  sm90::KernelProblem p;
  p.kind = OperationKind::grouped_m;
  p.b = &b;
  p.n = 512;
  p.b_major = Major::mn;
  auto why = [&](const EpilogueOps& ops) { return sm90::check_epilogue(p, ops, d, DType::bf16); };
  EXPECT_TRUE(why(EpilogueOps{}));
  EXPECT_TRUE(why(make_ops(Activation::swiglu, GateLayout::concatenated, DType::bf16, true)));
  EXPECT_TRUE(why(make_ops(Activation::silu, {}, DType::fp32, true)));

  Status s = why(make_ops(Activation::none, {}, DType::fp16, false));
  EXPECT_EQ(s.code(), ErrorCode::unsupported);
  EXPECT_NE(s.message().find("bias: sm90 kernels read a bias of fp32 or out's dtype (bf16)"), std::string::npos)
      << s.message();
  EpilogueOps scaled = make_ops(Activation::none, {}, {}, false);
  scaled.row_scale = fake(DType::bf16, {512});
  s = why(scaled);
  EXPECT_NE(s.message().find("row_scale: sm90 kernels read an fp32 row scale"), std::string::npos) << s.message();

  p.n = 2 * 260;  // I = 260: the up half of an N-major B would start 8 bytes off a 16-byte boundary
  s = why(make_ops(Activation::swiglu, GateLayout::concatenated, {}, false));
  EXPECT_EQ(s.code(), ErrorCode::unsupported);
  EXPECT_NE(s.message().find("got I 260"), std::string::npos) << s.message();
  EXPECT_TRUE(why(make_ops(Activation::swiglu, GateLayout::interleaved, {}, false)));
  p.b_major = Major::k;
  EXPECT_TRUE(why(make_ops(Activation::swiglu, GateLayout::concatenated, {}, false)));
  p.n = 511;
  s = why(make_ops(Activation::swiglu, GateLayout::interleaved, {}, false));
  EXPECT_NE(s.message().find("a gated activation pairs N = 2I columns; got N 511"), std::string::npos) << s.message();

  p.n = 512;
  p.kind = OperationKind::grouped_k;
  s = why(make_ops(Activation::silu, {}, {}, false));
  EXPECT_EQ(s.code(), ErrorCode::unsupported);
  EXPECT_NE(s.message().find("the K- and N-grouped forms take no epilogue ops"), std::string::npos) << s.message();
  EXPECT_TRUE(why(EpilogueOps{}));
}

}  // namespace
}  // namespace gemmops
