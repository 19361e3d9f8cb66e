// tests/gpu/test_sm90_epilogue.cpp: the sm90 operators' fused epilogue ops (bias, activation, gated
// SwiGLU in both layouts, row scale) against a float64 reference on ragged problems: an empty and a
// 1-row group, tile +- 1 rows, rows past offsets[G-1] untouched (or zeros with zero_tail), dense and
// batched forms, bf16/fp16/fp32 out, the direct and the TMA store. Instantiated from metadata on
// every machine; skipped with the reason where no sm_90a device is.
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gemmops/gemmops.hpp"
#include "support/compare.hpp"
#include "support/device_problem.hpp"
#include "support/random_problems.hpp"
#include "support/reference.hpp"
#include "support/sm90_operators.hpp"

namespace gemmops::testing {
namespace {

/// One epilogue to check: the ops (bias dtype "out" means out's dtype).
struct OpCase {
  std::string label;
  Activation act = Activation::none;
  GateLayout gate = GateLayout::concatenated;
  enum class Bias { none, fp32, out } bias = Bias::none;
  bool row_scale = false;
  float alpha = 1.702f, limit = 7.0f;
};

const std::vector<OpCase>& op_cases() {
  using B = OpCase::Bias;
  static const std::vector<OpCase> cases = {
      {"silu_bias_row_scale", Activation::silu, {}, B::out, true},
      {"gelu_tanh", Activation::gelu_tanh},
      {"relu_squared_bias_fp32", Activation::relu_squared, {}, B::fp32},
      {"bias_row_scale", Activation::none, {}, B::out, true},
      {"row_scale", Activation::none, {}, B::none, true},
      {"swiglu_concatenated_bias_row_scale", Activation::swiglu, GateLayout::concatenated, B::out, true},
      {"swiglu_interleaved_bias_fp32", Activation::swiglu, GateLayout::interleaved, B::fp32},
      // A small limit, so that the clamps of gate and up both bite.
      {"swiglu_oss_concatenated", Activation::swiglu_oss, GateLayout::concatenated, B::none, false, 1.702f, 0.75f},
      {"swiglu_oss_interleaved_bias_row_scale", Activation::swiglu_oss, GateLayout::interleaved, B::out, true, 1.5f,
       2.0f},
  };
  return cases;
}

/// The designs checked: direct stores (ping-pong, a 192-wide cooperative tile, one consumer) and TMA
/// stores (a ring of two boxes with a 2-CTA cluster, a tile's ring with one CTA).
const char* const kDesigns[] = {"128x128x64_c1x1_s6_pingpong", "128x192x64_c2x1_s5_coop", "64x128x64_c1x1_s8_smallm",
                                "128x256x64_c2x1_s4_coop_tma_ring2", "128x128x64_c1x1_s4_pingpong_tma"};

bool is_gated_case(const OpCase& c) { return is_gated(c.act); }

struct EpilogueParam {
  OperatorPtr op;
  OpCase c;
};

void PrintTo(const EpilogueParam& p, std::ostream* os) { *os << p.op->name() << " " << p.c.label; }

/// Every design above with bf16, fp16 and fp32 out (where registered), each with the cases it
/// serves: gated ones need a tile width of 128 or 256 (src/sm90/epilogue_support.cpp).
std::vector<EpilogueParam> params() {
  std::vector<EpilogueParam> out;
  for (const char* design : kDesigns)
    for (DType o : {DType::bf16, DType::fp16, DType::fp32}) {
      for (const OperatorPtr& op : sm90_operators()) {
        const OperatorMetadata& m = op->metadata();
        if (m.design.to_string() != design || m.constraints.out_dtypes.at(0) != o) continue;
        if (o == DType::fp32 && m.constraints.a_dtypes.at(0) != DType::bf16) continue;
        if (o != DType::fp32 && m.constraints.a_dtypes.at(0) != o) continue;
        for (const OpCase& c : op_cases()) {
          if (is_gated_case(c) && m.design.tile_n % 128 != 0) continue;
          out.push_back({op, c});
        }
      }
    }
  return out;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

double activate(const OpCase& c, double x) {
  switch (c.act) {
    case Activation::silu: return x * sigmoid(x);
    case Activation::gelu_tanh: return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
    case Activation::relu_squared: return x > 0 ? x * x : 0.0;
    default: return x;
  }
}

double activate_gated(const OpCase& c, double gate, double up) {
  if (c.act == Activation::swiglu) return gate * sigmoid(gate) * up;
  const double g = std::min(gate, double(c.limit));
  const double u = std::clamp(up, -double(c.limit), double(c.limit));
  return (u + 1.0) * g * sigmoid(double(c.alpha) * g);
}

/// A problem with its epilogue operands: out (rows, N or N/2), a bias row per group (or one row for
/// the dense form), a row scale per row of out (NaN on rows past offsets[G-1]: never to be read).
struct EpilogueProblem {
  HostProblem host;           // A, B, offsets; host.out is the product's shape (the reference's)
  HostTensor out, bias, row_scale;
  int64_t rows = 0, n = 0, n_out = 0;

  /// Which group (bias row) row r belongs to; -1 past the last group.
  int64_t group_of(int64_t r) const {
    const ProblemSpec& s = host.spec;
    if (s.kind == OperationKind::gemm) return 0;
    if (s.kind == OperationKind::batched_gemm) return r / s.m;
    for (size_t g = 0; g < host.ends.size(); ++g)
      if (r < host.ends[g]) return static_cast<int64_t>(g);
    return -1;
  }
};

EpilogueProblem make_epilogue_problem(const ProblemSpec& spec, const OpCase& c, std::mt19937& rng) {
  EpilogueProblem p;
  p.host = make_problem(spec, rng);
  const bool batched = spec.kind == OperationKind::batched_gemm;
  p.rows = batched ? spec.groups * spec.m : spec.m;
  p.n = spec.n;
  p.n_out = is_gated_case(c) ? spec.n / 2 : spec.n;
  p.out = batched ? HostTensor::contiguous(spec.out, {spec.groups, spec.m, p.n_out})
                  : HostTensor::contiguous(spec.out, {spec.m, p.n_out});
  p.out.poison();
  if (c.bias != OpCase::Bias::none) {
    const DType t = c.bias == OpCase::Bias::fp32 ? DType::fp32 : spec.out;
    p.bias = spec.kind == OperationKind::gemm ? HostTensor::contiguous(t, {spec.n})
                                              : HostTensor::contiguous(t, {spec.groups, spec.n});
    fill_random(p.bias, rng);
  }
  if (c.row_scale) {
    p.row_scale = batched ? HostTensor::contiguous(DType::fp32, {spec.groups, spec.m})
                          : HostTensor::contiguous(DType::fp32, {spec.m});
    fill_random(p.row_scale, rng, 0.25, 1.5);
    for (int64_t r = 0; r < p.rows; ++r)
      if (p.group_of(r) < 0) p.row_scale.set(r, std::numeric_limits<double>::quiet_NaN());
  }
  return p;
}

/// The expected out: the float64 product, then the op, per epilogue.hpp. `gate` overrides the
/// case's layout (the negative control).
Reference expected(const EpilogueProblem& p, const OpCase& c, std::optional<GateLayout> gate = {}) {
  const Reference product = reference_result(p.host.arguments());
  Reference r;
  r.values.assign(static_cast<size_t>(p.rows * p.n_out), 0.0);
  r.written.assign(static_cast<size_t>(p.rows * p.n_out), 0);
  const GateLayout layout = gate.value_or(c.gate);
  const int64_t I = p.n / 2;
  for (int64_t row = 0; row < p.rows; ++row) {
    const bool written = product.written[static_cast<size_t>(row * p.n)] != 0;
    const int64_t g = p.group_of(row);
    for (int64_t col = 0; col < p.n_out; ++col) {
      const size_t e = static_cast<size_t>(row * p.n_out + col);
      r.written[e] = written ? 1 : 0;
      if (!written || g < 0) continue;  // untouched, or the zero tail's zeros
      auto v = [&](int64_t pc) {
        const double b = c.bias == OpCase::Bias::none ? 0.0
                         : p.bias.desc.rank() == 1  ? p.bias.get(pc)
                                                    : p.bias.get(g * p.n + pc);
        return product.values[static_cast<size_t>(row * p.n + pc)] + b;
      };
      double x;
      if (!is_gated_case(c)) {
        x = activate(c, v(col));
      } else if (layout == GateLayout::concatenated) {
        x = activate_gated(c, v(col), v(I + col));
      } else {
        x = activate_gated(c, v(2 * col), v(2 * col + 1));
      }
      if (c.row_scale) x *= p.row_scale.get(row);
      r.values[e] = x;
    }
  }
  return r;
}

struct RunResult {
  Status status;
  HostTensor out;
};

/// Uploads `p`, runs `op` with the case's epilogue and returns out.
RunResult run_case(const Operator& op, const EpilogueProblem& p, const OpCase& c) {
  HostProblem host = p.host;
  host.out = p.out;
  auto dev = DeviceProblem::upload(host);
  if (!dev) return {dev.status(), {}};
  DeviceBuffer bias, row_scale;
  EpilogueOps ops;
  ops.activation = c.act;
  ops.gate_layout = c.gate;
  ops.alpha = c.alpha;
  ops.limit = c.limit;
  auto upload = [&](const HostTensor& t, DeviceBuffer* b) -> Result<TensorDesc> {
    GEMMOPS_ASSIGN_OR_RETURN(*b, DeviceBuffer::allocate(t.storage.size(), 0));
    GEMMOPS_TRY(b->copy_from_host(t.storage.data(), t.storage.size()));
    TensorDesc d = t.desc;
    d.device = Device::cuda(0);
    d.data = b->data();
    return d;
  };
  if (c.bias != OpCase::Bias::none) {
    auto d = upload(p.bias, &bias);
    if (!d) return {d.status(), {}};
    ops.bias = *d;
  }
  if (c.row_scale) {
    auto d = upload(p.row_scale, &row_scale);
    if (!d) return {d.status(), {}};
    ops.row_scale = *d;
  }
  std::visit([&](auto& a) { a.epilogue = ops; }, dev->args);
  if (Status s = op.supports(dev->args); !s) return {s, {}};
  auto artifact = op.compile(dev->args);
  if (!artifact) return {artifact.status(), {}};
  if (Status s = dev->run(op, *artifact); !s) return {s, {}};
  if (Status s = synchronize(); !s) return {s, {}};
  auto out = dev->download_out(p.out);
  if (!out) return {out.status(), {}};
  return {Status::ok(), *out};
}

/// Ragged M-grouped problems (both B majors, the zero tail), dense and batched, sized around the tile.
std::vector<ProblemSpec> problems_for(const OperatorMetadata& m) {
  const DType ab = m.constraints.a_dtypes.at(0), out = m.constraints.out_dtypes.at(0);
  const int64_t tm = m.design.tile_m, tn = m.design.tile_n;
  std::vector<ProblemSpec> specs;
  ProblemSpec s;
  s.a = s.b = ab;
  s.out = out;
  s.kind = OperationKind::grouped_m;
  s.m = 7 * tm + 3, s.n = 2 * tn + 64, s.k = 200, s.groups = 9, s.trailing = 5;  // an empty and a 1-row group
  specs.push_back(s);
  s.b_major = Major::mn;  // (I a multiple of 8: the up half of an N-major B starts on 16 bytes)
  s.m = tm + 1, s.n = 2 * tn - 16, s.k = 64, s.groups = 3, s.trailing = 7, s.zero_tail = true;  // tile + 1
  specs.push_back(s);
  s.b_major = Major::k, s.zero_tail = false;
  s.m = tm - 1, s.n = tn, s.k = 136, s.groups = 2, s.trailing = 0, s.special_groups = false;  // tile - 1
  specs.push_back(s);
  s.special_groups = true;
  s.kind = OperationKind::gemm;
  s.m = 3 * tm - 1, s.n = tn + 64, s.k = 136, s.groups = 1;
  specs.push_back(s);
  s.kind = OperationKind::batched_gemm;
  s.m = tm / 2 + 5, s.n = 128, s.k = 72, s.groups = 3;
  specs.push_back(s);
  return specs;
}

class Sm90EpilogueTest : public ::testing::TestWithParam<EpilogueParam> {};

TEST_P(Sm90EpilogueTest, matches_the_float64_reference_on_ragged_problems) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  const EpilogueParam& param = GetParam();
  std::mt19937 rng(4321);
  for (const ProblemSpec& spec : problems_for(param.op->metadata())) {
    SCOPED_TRACE(spec.describe());
    const EpilogueProblem p = make_epilogue_problem(spec, param.c, rng);
    const RunResult r = run_case(*param.op, p, param.c);
    ASSERT_TRUE(r.status) << r.status.to_string();
    const Comparison c = compare(r.out, expected(p, param.c), epilogue_tolerance(spec.out, spec.k));
    EXPECT_TRUE(c.ok()) << c.describe();
  }
}

std::string param_name(const ::testing::TestParamInfo<EpilogueParam>& info) {
  return info.param.op->name() + "_" + info.param.c.label;
}

INSTANTIATE_TEST_SUITE_P(Sm90, Sm90EpilogueTest, ::testing::ValuesIn(params()), param_name);

TEST(Sm90EpilogueControl, the_check_rejects_the_other_gate_layout_and_a_missing_row_scale) {
  // Negative controls: a result computed with the wrong pairing or without the row scale must fail
  // the comparison the tests above pass.
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  const std::vector<EpilogueParam> all = params();
  ASSERT_FALSE(all.empty());
  const OperatorPtr op = all.front().op;
  std::mt19937 rng(99);
  const ProblemSpec spec = problems_for(op->metadata()).front();
  OpCase c = op_cases()[5];  // swiglu, concatenated, bias, row scale
  const EpilogueProblem p = make_epilogue_problem(spec, c, rng);
  const RunResult r = run_case(*op, p, c);
  ASSERT_TRUE(r.status) << r.status.to_string();
  const Tolerance tol = epilogue_tolerance(spec.out, spec.k);
  EXPECT_TRUE(compare(r.out, expected(p, c), tol).ok());
  EXPECT_FALSE(compare(r.out, expected(p, c, GateLayout::interleaved), tol).ok());
  OpCase unscaled = c;
  unscaled.row_scale = false;
  EXPECT_FALSE(compare(r.out, expected(p, unscaled), tol).ok());
}

TEST(Sm90EpilogueControl, the_k_grouped_form_takes_no_epilogue_op_and_says_why) {
  // Metadata only: no device needed to refuse.
  const Device cuda = Device::cuda(0);
  const int64_t G = 4, M = 256, K = 512, N = 256;
  GroupedGemmArguments g{TensorDesc(DType::bf16, {M, K}, {1, M}, cuda), TensorDesc::contiguous(DType::bf16, {K, N}, cuda),
                         TensorDesc::contiguous(DType::bf16, {G, M, N}, cuda), DType::fp32,
                         TensorDesc::contiguous(DType::i32, {G}, cuda)};
  g.epilogue.activation = Activation::silu;
  const std::vector<OperatorPtr> ops = sm90_operators();
  ASSERT_FALSE(ops.empty());
  const Status s = ops.front()->supports(g);
  EXPECT_FALSE(s) << s.to_string();
  EXPECT_NE(s.message().find("epilogue"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace gemmops::testing
