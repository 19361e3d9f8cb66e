// tests/unit/test_cpu_activation_grad.cpp: the epilogue's second operands on the CPU operators: the
// activation's backward (activation_grad: dh, s act(h), the score-gradient partials; gated and plain) and the
// forward's pre_activation, against float64 formulas on ragged M-grouped problems; the derivative
// formulas themselves against finite differences and at swiglu_oss's clamp bounds
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gemmops/registry.hpp"
#include "support/activation_grad_reference.hpp"
#include "support/host_tensor.hpp"
#include "support/reference.hpp"

namespace gemmops::testing {
namespace {

EpilogueOps gated_ops(Activation a, GateLayout layout, float limit = 1.25f) {
  EpilogueOps e;
  e.activation = a;
  e.gate_layout = layout;
  e.alpha = 1.702f;
  e.limit = limit;
  return e;
}

// --- the formulas -------------------------------------------------------------------------------

TEST(ActivationGradFormula, derivatives_match_central_differences_away_from_the_clamps) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> d(-3.0, 3.0);
  for (Activation a : {Activation::swiglu, Activation::swiglu_oss}) {
    const EpilogueOps e = gated_ops(a, GateLayout::concatenated, 7.0f);
    for (int i = 0; i < 200; ++i) {
      const double g = d(rng), u = d(rng), h = 1e-6;
      const GatedGrad v = gated_grad(e, g, u);
      const double dg = (gated_grad(e, g + h, u).act - gated_grad(e, g - h, u).act) / (2 * h);
      const double du = (gated_grad(e, g, u + h).act - gated_grad(e, g, u - h).act) / (2 * h);
      EXPECT_NEAR(v.d_gate, dg, 1e-6 * (1 + std::abs(dg))) << name(a) << " g " << g << " u " << u;
      EXPECT_NEAR(v.d_up, du, 1e-6 * (1 + std::abs(du))) << name(a) << " g " << g << " u " << u;
    }
  }
}

TEST(ActivationGradFormula, plain_derivatives_match_central_differences) {
  std::mt19937 rng(8);
  std::uniform_real_distribution<double> d(-3.0, 3.0);
  for (Activation a : {Activation::silu, Activation::gelu_tanh, Activation::relu_squared})
    for (int i = 0; i < 200; ++i) {
      const double x = d(rng), h = 1e-6;
      const double want = (plain_grad(a, x + h).act - plain_grad(a, x - h).act) / (2 * h);
      EXPECT_NEAR(plain_grad(a, x).d_gate, want, 1e-6 * (1 + std::abs(want))) << name(a) << " x " << x;
    }
}

TEST(ActivationGradFormula, swiglu_oss_passes_the_gradient_at_the_clamp_bounds_and_none_past_them) {
  const EpilogueOps e = gated_ops(Activation::swiglu_oss, GateLayout::concatenated, 2.0f);
  const double limit = 2.0, alpha = e.alpha;
  const double s = 1.0 / (1.0 + std::exp(-alpha * limit));
  // gate at the bound: the unclamped derivative (torch's clamp passes it at max)
  const GatedGrad at = gated_grad(e, limit, 0.5);
  EXPECT_DOUBLE_EQ(at.d_gate, 1.5 * s * (1.0 + alpha * limit * (1.0 - s)));
  EXPECT_EQ(gated_grad(e, limit + 1e-3, 0.5).d_gate, 0.0);
  // up at either bound: gc sigmoid(alpha gc); past them: 0
  EXPECT_DOUBLE_EQ(gated_grad(e, 1.0, limit).d_up, 1.0 / (1.0 + std::exp(-alpha)));
  EXPECT_DOUBLE_EQ(gated_grad(e, 1.0, -limit).d_up, 1.0 / (1.0 + std::exp(-alpha)));
  EXPECT_EQ(gated_grad(e, 1.0, limit + 1e-3).d_up, 0.0);
  EXPECT_EQ(gated_grad(e, 1.0, -limit - 1e-3).d_up, 0.0);
  // past the up clamp the value still depends on the gate (u clamped to +-limit)
  EXPECT_DOUBLE_EQ(gated_grad(e, 1.0, 5.0).act, 3.0 * 1.0 / (1.0 + std::exp(-alpha)));
}

// --- the CPU operator ---------------------------------------------------------------------------

// Values bf16 holds exactly (k/8): the fp32 product is exact, only the epilogue rounds.
void fill(HostTensor& t, std::mt19937& rng, double lo, double hi) {
  std::uniform_int_distribution<int> d(static_cast<int>(lo * 8), static_cast<int>(hi * 8));
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, d(rng) / 8.0);
}

// Ragged groups: an empty one, a one-row one; rows 9..11 lie past offsets[G-1].
const std::vector<int32_t> kEnds = {3, 3, 4, 9};
constexpr int64_t kTotalM = 12, kK = 7, kLastEnd = 9;

struct GradProblem {
  HostTensor A, B, out, offsets, h, scores, scaled, partials;
  int64_t n = 0;  // I: the product's columns
  bool has_scores = false;
};

// h and dh: 2n columns with a gated activation, n with a plain one.
GradProblem make_grad_problem(DType out, int64_t n, bool gated, bool scores, std::mt19937& rng) {
  GradProblem p;
  const auto groups = static_cast<int64_t>(kEnds.size());
  const int64_t hn = gated ? 2 * n : n;
  p.n = n;
  p.A = HostTensor::contiguous(DType::bf16, {kTotalM, kK});
  p.B = HostTensor::contiguous(DType::bf16, {groups, kK, n});
  p.out = HostTensor::contiguous(out, {kTotalM, hn});
  p.offsets = HostTensor::contiguous(DType::i32, {groups});
  for (int64_t g = 0; g < groups; ++g) p.offsets.set(g, kEnds[static_cast<size_t>(g)]);
  p.h = HostTensor::contiguous(out, {kTotalM, hn});
  p.scaled = HostTensor::contiguous(out, {kTotalM, n});
  p.partials = HostTensor::contiguous(DType::fp32, {kTotalM, score_grad_chunks(n)});
  fill(p.A, rng, -1.0, 1.0);
  fill(p.B, rng, -1.0, 1.0);
  fill(p.h, rng, -3.0, 3.0);  // past swiglu_oss's limit of 1.25 on both sides, and on it
  p.has_scores = scores;
  if (scores) {
    p.scores = HostTensor::contiguous(DType::fp32, {kTotalM});
    fill(p.scores, rng, 0.25, 1.5);
  }
  p.out.poison();
  p.scaled.poison();
  p.partials.poison();
  return p;
}

Arguments grad_arguments(GradProblem& p, EpilogueOps e, bool zero_tail) {
  e.activation_grad = ActivationGrad{p.h.desc, p.scaled.desc, p.partials.desc};
  if (p.has_scores) e.row_scale = p.scores.desc;
  GroupedGemmArguments g{p.A.desc, p.B.desc, p.out.desc, DType::fp32, p.offsets.desc, zero_tail};
  g.epilogue = e;
  return g;
}

double tolerance(DType t, double v) {
  const double rel = t == DType::bf16 ? 1.0 / 128 : 1e-5;
  return rel * std::abs(v) + rel * 0.25 + 1e-6;
}

// "" when row r of `got` holds `want` (or, want empty, still its poison bytes; zero_tail: zeros).
std::string check_row(const HostTensor& got, const HostTensor& poison, int64_t r, const std::vector<double>& want,
                      const char* what) {
  const int64_t cols = got.desc.shape[1];
  for (int64_t c = 0; c < cols; ++c) {
    const int64_t i = r * cols + c;
    if (want.empty()) {
      if (std::memcmp(got.at(i), poison.at(i), size_of(got.desc.dtype)) != 0)
        return std::string(what) + " row " + std::to_string(r) + " past offsets[G-1] was written";
      continue;
    }
    const double w = want[static_cast<size_t>(c)];
    if (!(std::abs(got.get(i) - w) <= tolerance(got.desc.dtype, w)))
      return std::string(what) + " (" + std::to_string(r) + ", " + std::to_string(c) + "): got " +
             std::to_string(got.get(i)) + ", want " + std::to_string(w);
  }
  return "";
}

void check_grad(Activation a, GateLayout layout, DType out, bool scores, bool zero_tail, int64_t n) {
  SCOPED_TRACE(std::string(name(a)) + " " + std::string(name(layout)) + " out " + std::string(name(out)) +
               (scores ? " scores" : "") + (zero_tail ? " zero_tail" : "") + " I " + std::to_string(n));
  std::mt19937 rng(99);
  const bool gated = is_gated(a);
  const int64_t hn = gated ? 2 * n : n;
  GradProblem p = make_grad_problem(out, n, gated, scores, rng);
  const HostTensor out_poison = p.out, scaled_poison = p.scaled, partials_poison = p.partials;
  const EpilogueOps e = gated_ops(a, layout);
  const Arguments args = grad_arguments(p, e, zero_tail);
  const std::vector<OperatorPtr> ops = get_operators(args, Target::cpu());
  ASSERT_FALSE(ops.empty());
  ASSERT_EQ(ops[0]->metadata().provider, "cpu");
  const Status s = ops[0]->run(args, {}, nullptr, {});
  ASSERT_TRUE(s) << s.to_string();
  // dA alone: the same product into an fp32 (TotalM, I) without ops.
  GroupedGemmArguments product{p.A.desc, p.B.desc, TensorDesc::contiguous(DType::fp32, {kTotalM, n}), DType::fp32,
                               p.offsets.desc};
  const std::vector<double> da = reference(product);
  for (int64_t r = 0; r < kTotalM; ++r) {
    ActivationGradRow want;
    if (r < kLastEnd) {
      std::vector<double> h(static_cast<size_t>(hn));
      for (int64_t c = 0; c < hn; ++c) h[static_cast<size_t>(c)] = p.h.get(r * hn + c);
      want = activation_grad_row(e, {da.begin() + r * n, da.begin() + (r + 1) * n}, h, scores ? p.scores.get(r) : 1.0);
    } else if (zero_tail) {
      want = {std::vector<double>(static_cast<size_t>(hn)), std::vector<double>(static_cast<size_t>(n)),
              std::vector<double>(static_cast<size_t>(score_grad_chunks(n)))};
    }
    ASSERT_EQ(check_row(p.out, out_poison, r, want.dh, "dh"), "");
    ASSERT_EQ(check_row(p.scaled, scaled_poison, r, want.scaled, "scaled_activation"), "");
    ASSERT_EQ(check_row(p.partials, partials_poison, r, want.partials, "score_grad_partials"), "");
  }
}

TEST(CpuActivationGrad, matches_the_float64_formula_on_ragged_groups_in_both_layouts) {
  for (Activation a : {Activation::swiglu, Activation::swiglu_oss})
    for (GateLayout layout : kAllGateLayouts)
      for (DType out : {DType::bf16, DType::fp32})
        for (bool scores : {false, true}) check_grad(a, layout, out, scores, false, 70);  // two chunks, one short
}

TEST(CpuActivationGrad, the_plain_activations_match_the_float64_formula) {
  for (Activation a : {Activation::silu, Activation::gelu_tanh, Activation::relu_squared})
    for (bool scores : {false, true}) check_grad(a, GateLayout::concatenated, DType::bf16, scores, false, 70);
  check_grad(Activation::relu_squared, GateLayout::concatenated, DType::fp32, true, true, 10);
}

TEST(CpuActivationGrad, the_zero_tail_writes_zeros_to_every_output_past_the_last_group) {
  check_grad(Activation::swiglu_oss, GateLayout::interleaved, DType::bf16, true, true, 10);
  check_grad(Activation::swiglu, GateLayout::concatenated, DType::fp32, false, true, 130);
}

TEST(CpuPreActivation, stores_the_product_plus_bias_beside_the_activation) {
  std::mt19937 rng(5);
  const auto groups = static_cast<int64_t>(kEnds.size());
  constexpr int64_t n = 12;
  HostTensor A = HostTensor::contiguous(DType::bf16, {kTotalM, kK});
  HostTensor B = HostTensor::contiguous(DType::bf16, {groups, kK, n});
  HostTensor bias = HostTensor::contiguous(DType::fp32, {groups, n});
  HostTensor out = HostTensor::contiguous(DType::fp32, {kTotalM, n / 2});
  HostTensor pre = HostTensor::contiguous(DType::fp32, {kTotalM, n});
  HostTensor offsets = HostTensor::contiguous(DType::i32, {groups});
  for (int64_t g = 0; g < groups; ++g) offsets.set(g, kEnds[static_cast<size_t>(g)]);
  fill(A, rng, -1.0, 1.0);
  fill(B, rng, -1.0, 1.0);
  fill(bias, rng, -1.0, 1.0);
  pre.poison();
  const HostTensor poison = pre;
  EpilogueOps e = gated_ops(Activation::swiglu, GateLayout::interleaved);
  e.bias = bias.desc;
  e.pre_activation = pre.desc;
  GroupedGemmArguments g{A.desc, B.desc, out.desc, DType::fp32, offsets.desc};
  g.epilogue = e;
  const std::vector<OperatorPtr> ops = get_operators(g, Target::cpu());
  ASSERT_FALSE(ops.empty());
  ASSERT_TRUE(ops[0]->run(g, {}, nullptr, {}));
  GroupedGemmArguments product{A.desc, B.desc, TensorDesc::contiguous(DType::fp32, {kTotalM, n}), DType::fp32,
                               offsets.desc};
  const std::vector<double> acc = reference(product);
  for (int64_t r = 0, group = 0; r < kTotalM; ++r) {
    while (group < groups && r >= kEnds[static_cast<size_t>(group)]) ++group;
    std::vector<double> want;
    if (group < groups)
      for (int64_t c = 0; c < n; ++c) want.push_back(acc[static_cast<size_t>(r * n + c)] + bias.get(group * n + c));
    ASSERT_EQ(check_row(pre, poison, r, want, "pre_activation"), "");
    if (group >= groups) continue;
    for (int64_t c = 0; c < n / 2; ++c)  // out is still the activation
      EXPECT_NEAR(out.get(r * n / 2 + c), gated_grad(e, want[2 * c], want[2 * c + 1]).act, 1e-5);
  }
}

// --- validate(): each rule names the operand and the rule ---------------------------------------

struct GradShapes {
  HostTensor A, B, out, offsets, h, scaled, partials, scores;
  GradShapes() {
    A = HostTensor::contiguous(DType::bf16, {kTotalM, kK});
    B = HostTensor::contiguous(DType::bf16, {4, kK, 70});
    out = HostTensor::contiguous(DType::bf16, {kTotalM, 140});
    offsets = HostTensor::contiguous(DType::i32, {4});
    for (int64_t g = 0; g < 4; ++g) offsets.set(g, kEnds[static_cast<size_t>(g)]);
    h = HostTensor::contiguous(DType::bf16, {kTotalM, 140});
    scaled = HostTensor::contiguous(DType::bf16, {kTotalM, 70});
    partials = HostTensor::contiguous(DType::fp32, {kTotalM, 2});
    scores = HostTensor::contiguous(DType::fp32, {kTotalM});
  }
  GroupedGemmArguments args() const {
    GroupedGemmArguments g{A.desc, B.desc, out.desc, DType::fp32, offsets.desc};
    g.epilogue = gated_ops(Activation::swiglu, GateLayout::concatenated);
    g.epilogue.activation_grad = ActivationGrad{h.desc, scaled.desc, partials.desc};
    g.epilogue.row_scale = scores.desc;
    return g;
  }
};

std::string message_of(const GroupedGemmArguments& g) { return validate(g).to_string(); }

TEST(ValidateActivationGrad, valid_arguments_pass) {
  const GradShapes s;
  EXPECT_TRUE(validate(s.args())) << message_of(s.args());
}

TEST(ValidateActivationGrad, out_must_have_twice_the_products_columns) {
  GradShapes s;
  GroupedGemmArguments g = s.args();
  g.out = TensorDesc::contiguous(DType::bf16, {kTotalM, 70});
  EXPECT_NE(message_of(g).find("out: N (70) must equal twice B's N (140) with activation_grad"), std::string::npos)
      << message_of(g);
}

TEST(ValidateActivationGrad, needs_an_activation_and_no_bias) {
  GradShapes s;
  GroupedGemmArguments g = s.args();
  g.epilogue.activation = Activation::none;
  EXPECT_NE(message_of(g).find("epilogue.activation_grad: needs the activation whose backward it computes"),
            std::string::npos)
      << message_of(g);
  g = s.args();
  HostTensor bias = HostTensor::contiguous(DType::fp32, {4, 70});
  g.epilogue.bias = bias.desc;
  EXPECT_NE(message_of(g).find("epilogue.activation_grad: takes no bias"), std::string::npos) << message_of(g);
}

TEST(ValidateActivationGrad, each_tensor_names_its_shape_and_dtype_rule) {
  GradShapes s;
  GroupedGemmArguments g = s.args();
  g.epilogue.activation_grad->pre_activation = TensorDesc::contiguous(DType::bf16, {kTotalM, 70});
  EXPECT_NE(message_of(g).find("epilogue.activation_grad.pre_activation: must have shape (TotalM, 2I), I = B's N, "
                               "with a gated activation = (12, 140); got (12, 70)"),
            std::string::npos)
      << message_of(g);
  g = s.args();
  g.epilogue.activation_grad->pre_activation = TensorDesc::contiguous(DType::fp32, {kTotalM, 140});
  EXPECT_NE(message_of(g).find("epilogue.activation_grad.pre_activation: dtype must be out's dtype (bf16); got fp32"),
            std::string::npos)
      << message_of(g);
  g = s.args();
  g.epilogue.activation_grad->scaled_activation = TensorDesc::contiguous(DType::bf16, {kTotalM, 140});
  EXPECT_NE(message_of(g).find("epilogue.activation_grad.scaled_activation: must have shape (TotalM, I)"),
            std::string::npos)
      << message_of(g);
  g = s.args();
  g.epilogue.activation_grad->score_grad_partials = TensorDesc::contiguous(DType::fp32, {kTotalM, 1});
  EXPECT_NE(message_of(g).find("epilogue.activation_grad.score_grad_partials: must have shape (TotalM, ceil(I / 64)), "
                               "I = B's N = (12, 2); got (12, 1)"),
            std::string::npos)
      << message_of(g);
  g = s.args();
  g.epilogue.activation_grad->score_grad_partials = TensorDesc::contiguous(DType::bf16, {kTotalM, 2});
  EXPECT_NE(message_of(g).find("score_grad_partials: dtype must be fp32 (fp32); got bf16"), std::string::npos)
      << message_of(g);
  g = s.args();
  g.epilogue.activation_grad->scaled_activation = TensorDesc(DType::bf16, {kTotalM, 70}, {1, kTotalM}, Device::cpu());
  EXPECT_NE(message_of(g).find("scaled_activation: last dimension must be contiguous (stride 1); got stride 12"),
            std::string::npos)
      << message_of(g);
}

TEST(ValidateActivationGrad, only_the_m_grouped_form_takes_the_second_operands) {
  GradShapes s;
  GemmArguments d{TensorDesc::contiguous(DType::bf16, {kTotalM, kK}), TensorDesc::contiguous(DType::bf16, {kK, 70}),
                  TensorDesc::contiguous(DType::bf16, {kTotalM, 140}), DType::fp32};
  d.epilogue = s.args().epilogue;
  d.epilogue.row_scale.reset();
  const std::string m = validate(d).to_string();
  EXPECT_NE(m.find("epilogue.activation_grad: only the M-grouped form (grouped_gemm_m) takes it; got gemm"),
            std::string::npos)
      << m;
}

TEST(ValidatePreActivation, needs_an_activation_its_shape_and_out_dtype) {
  GradShapes s;
  GroupedGemmArguments g{s.A.desc, s.B.desc, TensorDesc::contiguous(DType::bf16, {kTotalM, 35}), DType::fp32,
                         s.offsets.desc};
  g.epilogue = gated_ops(Activation::swiglu, GateLayout::interleaved);
  g.epilogue.pre_activation = TensorDesc::contiguous(DType::bf16, {kTotalM, 70});
  EXPECT_TRUE(validate(g)) << message_of(g);
  g.epilogue.pre_activation = TensorDesc::contiguous(DType::bf16, {kTotalM, 35});
  EXPECT_NE(message_of(g).find("epilogue.pre_activation: must have shape (TotalM, N) over the product's N (B's N) = "
                               "(12, 70); got (12, 35)"),
            std::string::npos)
      << message_of(g);
  g.epilogue.pre_activation = TensorDesc::contiguous(DType::fp32, {kTotalM, 70});
  EXPECT_NE(message_of(g).find("epilogue.pre_activation: dtype must be out's dtype (bf16); got fp32"),
            std::string::npos)
      << message_of(g);
  g.out = TensorDesc::contiguous(DType::bf16, {kTotalM, 70});
  g.epilogue.activation = Activation::none;
  g.epilogue.pre_activation = TensorDesc::contiguous(DType::bf16, {kTotalM, 70});
  EXPECT_NE(message_of(g).find("epilogue.pre_activation: needs an activation"), std::string::npos) << message_of(g);
}

}  // namespace
}  // namespace gemmops::testing
