// tests/gpu/test_sm90_epilogue_outputs.cpp: the sm90 operators' epilogue second operands against the
// float64 formulas on ragged M-grouped problems (an empty and a 1-row group, tile +- 1 rows, rows
// past offsets[G-1] untouched or zeros with zero_tail, I not a multiple of 64): the activation's
// backward (dh in both gate layouts, s act(h), the score-gradient partials; swiglu and swiglu_oss with
// clamps that bite, and the plain activations) and the forward's pre_activation. Trial paths: asked for with
// GEMMOPS_TRIAL_DESIGNS=1. Skipped with the reason where no sm_90a device is.
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "gemmops/gemmops.hpp"
#include "support/activation_grad_reference.hpp"
#include "support/compare.hpp"
#include "support/device_problem.hpp"
#include "support/random_problems.hpp"
#include "support/reference.hpp"
#include "support/scoped_env.hpp"
#include "support/sm90_operators.hpp"

namespace gemmops::testing {
namespace {

struct OutputsCase {
  std::string label;
  bool grad = true;  // the backward; else the forward with pre_activation
  Activation act = Activation::swiglu;
  GateLayout gate = GateLayout::concatenated;
  bool scores_or_bias = true;  // grad: scores (row_scale); forward: an fp32 bias
  float limit = 7.0f;
};

const std::vector<OutputsCase>& cases() {
  static const std::vector<OutputsCase> c = {
      {"grad_swiglu_concatenated_scores", true, Activation::swiglu, GateLayout::concatenated, true},
      {"grad_swiglu_interleaved", true, Activation::swiglu, GateLayout::interleaved, false},
      // A small limit, so that the clamps of gate and up both bite (and h lands on them).
      {"grad_swiglu_oss_concatenated_scores", true, Activation::swiglu_oss, GateLayout::concatenated, true, 0.75f},
      {"grad_swiglu_oss_interleaved_scores", true, Activation::swiglu_oss, GateLayout::interleaved, true, 0.75f},
      {"grad_silu_scores", true, Activation::silu, GateLayout::concatenated, true},
      {"grad_gelu_tanh", true, Activation::gelu_tanh, GateLayout::concatenated, false},
      {"grad_relu_squared_scores", true, Activation::relu_squared, GateLayout::concatenated, true},
      {"pre_swiglu_concatenated_bias", false, Activation::swiglu, GateLayout::concatenated, true},
      {"pre_swiglu_oss_interleaved", false, Activation::swiglu_oss, GateLayout::interleaved, false, 0.75f},
      {"pre_silu_bias", false, Activation::silu, GateLayout::concatenated, true},
  };
  return c;
}

/// Direct-store designs: ping-pong, a 2-CTA cooperative, one consumer, a 64-row ping-pong, and the
/// 192-accumulator ping-pong (the plain activations' pre-activation only: src/sm90/epilogue_support.cpp).
const char* const kDesigns[] = {"128x128x64_c1x1_s6_pingpong", "128x256x64_c2x1_s4_coop", "64x128x64_c1x1_s8_smallm",
                                "64x256x64_c1x1_s5_pingpong", "64x256x64_c2x1_s5_pingpong",
                                "128x192x64_c1x1_s5_pingpong"};
/// TMA-store designs (staged through the ring): 1- and 2-CTA cooperative rings and the TMA
/// ping-pong; the backward where the ring holds a chunk's three boxes (kTmaGradDesigns).
const char* const kTmaDesigns[] = {"128x256x64_c1x1_s4_coop_tma_ring2", "128x256x64_c2x1_s4_coop_tma_ring2",
                                   "128x128x64_c1x1_s4_pingpong_tma", "128x128x64_c2x1_s5_coop_tma",
                                   "128x256x64_c2x1_s3_coop_tma"};
const char* const kTmaGradDesigns[] = {"128x128x64_c1x1_s4_pingpong_tma", "128x128x64_c2x1_s5_coop_tma",
                                       "128x256x64_c2x1_s3_coop_tma"};
/// With A's rows gathered too (the MoE step's up projection and dgated GEMM): the designs the ranking
/// picks for them on the H100 and the H200 (each also in kDesigns or kTmaDesigns).
const char* const kGatheredDesigns[] = {"64x256x64_c1x1_s5_pingpong", "64x256x64_c2x1_s5_pingpong",
                                        "128x128x64_c1x1_s6_pingpong", "128x256x64_c1x1_s4_coop_tma_ring2",
                                        "128x128x64_c1x1_s4_pingpong_tma", "128x128x64_c2x1_s5_coop_tma"};

template <std::size_t N>
bool listed(const char* const (&names)[N], const std::string& design) {
  return std::find_if(names, names + N, [&](const char* d) { return design == d; }) != names + N;
}

struct Param {
  OperatorPtr op;
  OutputsCase c;
  bool gathered = false;  ///< A's rows read through a_row_index (from a reversed copy of A)
};
void PrintTo(const Param& p, std::ostream* os) {
  *os << p.op->name() << " " << p.c.label << (p.gathered ? " gathered" : "");
}

std::vector<Param> params() {
  std::vector<Param> out;
  std::vector<const char*> designs(std::begin(kDesigns), std::end(kDesigns));
  designs.insert(designs.end(), std::begin(kTmaDesigns), std::end(kTmaDesigns));
  for (const char* design : designs)
    for (DType o : {DType::bf16, DType::fp32})
      for (const OperatorPtr& op : sm90_operators()) {
        const OperatorMetadata& m = op->metadata();
        if (m.design.to_string() != design || m.constraints.out_dtypes.at(0) != o ||
            m.constraints.a_dtypes.at(0) != DType::bf16)
          continue;
        for (const OutputsCase& c : cases()) {
          if (m.design.tile_n % 128 != 0 && (c.grad || is_gated(c.act))) continue;  // served where it halves
          const std::string name = m.design.to_string();
          if (m.design.epilogue == Epilogue::tma_store && c.grad &&
              !listed(kTmaGradDesigns, name))
            continue;  // the ring holds no chunk's three boxes
          if (o == DType::bf16 || c.label == "grad_swiglu_oss_interleaved_scores") out.push_back({op, c});
          if (o == DType::bf16 && listed(kGatheredDesigns, name))
            out.push_back({op, c, true});
        }
      }
  return out;
}

/// The problem: A, B, offsets (host.out has the product's shape: the reference's), out, and the
/// second operands (h's and the scores' rows past offsets[G-1] are NaN: never to be read).
struct OutputsProblem {
  HostProblem host;
  HostTensor out, bias, h, scores, pre, scaled, partials;
  int64_t rows = 0, n = 0;  // n: the product's columns (I in the backward)
};

OutputsProblem make_outputs_problem(const ProblemSpec& spec, const OutputsCase& c, std::mt19937& rng) {
  OutputsProblem p;
  p.host = make_problem(spec, rng);
  p.rows = spec.m;
  p.n = spec.n;
  const int64_t last_end = p.host.ends.empty() ? 0 : p.host.ends.back();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (c.grad) {
    const int64_t hn = is_gated(c.act) ? 2 * p.n : p.n;  // h and dh
    p.out = HostTensor::contiguous(spec.out, {p.rows, hn});
    p.h = HostTensor::contiguous(spec.out, {p.rows, hn});
    fill_random(p.h, rng, -3.0, 3.0);
    for (int64_t r = 0; r < p.rows; ++r)  // some h exactly on the clamps (bf16 holds 0.75)
      p.h.set(r * hn + r % hn, r % 2 ? c.limit : -c.limit);
    p.scaled = HostTensor::contiguous(spec.out, {p.rows, p.n});
    p.partials = HostTensor::contiguous(DType::fp32, {p.rows, score_grad_chunks(p.n)});
    p.scaled.poison();
    p.partials.poison();
    if (c.scores_or_bias) {
      p.scores = HostTensor::contiguous(DType::fp32, {p.rows});
      fill_random(p.scores, rng, 0.25, 1.5);
    }
    for (int64_t r = last_end; r < p.rows; ++r) {
      for (int64_t col = 0; col < hn; ++col) p.h.set(r * hn + col, nan);
      if (c.scores_or_bias) p.scores.set(r, nan);
    }
  } else {
    const int64_t out_n = is_gated(c.act) ? p.n / 2 : p.n;
    // out's rows on 16 bytes, as the operator asks: padded where I = n / 2 is 4 mod 8.
    const int64_t out_ld = (out_n + 7) / 8 * 8;
    p.out = HostTensor::strided(spec.out, {p.rows, out_n}, {out_ld, 1});
    p.pre = HostTensor::contiguous(spec.out, {p.rows, p.n});
    p.pre.poison();
    if (c.scores_or_bias) {
      p.bias = HostTensor::contiguous(DType::fp32, {spec.groups, p.n});
      fill_random(p.bias, rng);
    }
  }
  p.out.poison();
  return p;
}

struct Expected {
  Reference out, second, partials;  // grad: dh, s act(h), partials; forward: out (unchecked here), pre
};

Reference sized(int64_t n) {
  Reference r;
  r.values.assign(static_cast<size_t>(n), 0.0);
  r.written.assign(static_cast<size_t>(n), 0);
  return r;
}

EpilogueOps ops_of(const OutputsCase& c) {
  EpilogueOps e;
  e.activation = c.act;
  e.gate_layout = c.gate;
  e.limit = c.limit;
  return e;
}

/// dh, s act(h) and the partials (backward), or the pre-activation (forward), per epilogue.hpp.
Expected expected(const OutputsProblem& p, const OutputsCase& c, std::optional<GateLayout> gate = {}) {
  const Reference product = reference_result(p.host.arguments());
  const int64_t n = p.n, chunks = score_grad_chunks(n), hn = is_gated(c.act) ? 2 * n : n;
  const int64_t last_end = p.host.ends.empty() ? 0 : p.host.ends.back();
  Expected e{sized(p.rows * hn), sized(p.rows * n), sized(p.rows * chunks)};
  EpilogueOps ops = ops_of(c);
  if (gate) ops.gate_layout = *gate;
  for (int64_t r = 0, g = 0; r < p.rows; ++r) {
    while (g < static_cast<int64_t>(p.host.ends.size()) && r >= p.host.ends[static_cast<size_t>(g)]) ++g;
    if (product.written[static_cast<size_t>(r * n)] == 0) continue;  // untouched
    const bool tail = r >= last_end;                                 // zero_tail: zeros
    auto mark = [&](Reference& ref, int64_t cols, const std::vector<double>& v) {
      for (int64_t col = 0; col < cols; ++col) {
        ref.written[static_cast<size_t>(r * cols + col)] = 1;
        ref.values[static_cast<size_t>(r * cols + col)] = tail ? 0.0 : v[static_cast<size_t>(col)];
      }
    };
    std::vector<double> acc(product.values.begin() + r * n, product.values.begin() + (r + 1) * n);
    if (c.grad) {
      ActivationGradRow row{std::vector<double>(static_cast<size_t>(hn)), std::vector<double>(static_cast<size_t>(n)),
                            std::vector<double>(static_cast<size_t>(chunks))};
      if (!tail) {
        std::vector<double> h(static_cast<size_t>(hn));
        for (int64_t col = 0; col < hn; ++col) h[static_cast<size_t>(col)] = p.h.get(r * hn + col);
        row = activation_grad_row(ops, acc, h, c.scores_or_bias ? p.scores.get(r) : 1.0);
      }
      mark(e.out, hn, row.dh);
      mark(e.second, n, row.scaled);
      mark(e.partials, chunks, row.partials);
    } else {
      if (c.scores_or_bias && !tail)
        for (int64_t col = 0; col < n; ++col) acc[static_cast<size_t>(col)] += p.bias.get(g * n + col);
      mark(e.second, n, acc);
    }
  }
  return e;
}

struct RunResult {
  Status status;
  HostTensor out, second, partials;
};

Result<TensorDesc> upload(const HostTensor& t, DeviceBuffer* b) {
  GEMMOPS_ASSIGN_OR_RETURN(*b, DeviceBuffer::allocate(t.storage.size(), 0));
  GEMMOPS_TRY(b->copy_from_host(t.storage.data(), t.storage.size()));
  TensorDesc d = t.desc;
  d.device = Device::cuda(0);
  d.data = b->data();
  return d;
}

Result<HostTensor> download(const HostTensor& like, const DeviceBuffer& b) {
  HostTensor r = like;
  GEMMOPS_TRY(b.copy_to_host(r.storage.data(), r.storage.size()));
  return r;
}

RunResult run_case(const Operator& op, const OutputsProblem& p, const OutputsCase& c, bool gathered = false) {
  HostProblem host = p.host;
  host.out = p.out;
  auto dev = DeviceProblem::upload(host);
  if (!dev) return {dev.status(), {}, {}, {}};
  DeviceBuffer bias, h, scores, pre, scaled, partials, source, index;
  if (gathered) {
    // A's rows reversed in a copy, read back in order through the index: the same product, gathered.
    const HostTensor& a = p.host.A;
    const int64_t rows = a.desc.size(0), row_bytes = a.desc.size(1) * static_cast<int64_t>(size_of(a.desc.dtype));
    HostTensor reversed = HostTensor::contiguous(a.desc.dtype, {rows, a.desc.size(1)});
    HostTensor idx = HostTensor::contiguous(DType::i32, {rows});
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(reversed.at((rows - 1 - r) * a.desc.size(1)), a.at(r * a.desc.size(1)), static_cast<size_t>(row_bytes));
      idx.set(r, static_cast<double>(rows - 1 - r));
    }
    auto s = upload(reversed, &source);
    auto i = upload(idx, &index);
    if (!s || !i) return {s ? i.status() : s.status(), {}, {}, {}};
    std::visit([&](auto& args) {
      if constexpr (std::is_same_v<std::decay_t<decltype(args)>, GroupedGemmArguments>) {
        args.A = *s;
        args.a_row_index = *i;
      }
    }, dev->args);
  }
  EpilogueOps ops = ops_of(c);
  auto fail = [](const Status& s) { return RunResult{s, {}, {}, {}}; };
#define UPLOAD_OR_FAIL(tensor, buffer, into)    \
  do {                                          \
    auto d = upload(tensor, &buffer);           \
    if (!d) return fail(d.status());            \
    into = *d;                                  \
  } while (0)
  if (c.grad) {
    ActivationGrad g;
    UPLOAD_OR_FAIL(p.h, h, g.pre_activation);
    UPLOAD_OR_FAIL(p.scaled, scaled, g.scaled_activation);
    UPLOAD_OR_FAIL(p.partials, partials, g.score_grad_partials);
    ops.activation_grad = g;
    if (c.scores_or_bias) UPLOAD_OR_FAIL(p.scores, scores, ops.row_scale);
  } else {
    UPLOAD_OR_FAIL(p.pre, pre, ops.pre_activation);
    if (c.scores_or_bias) UPLOAD_OR_FAIL(p.bias, bias, ops.bias);
  }
#undef UPLOAD_OR_FAIL
  std::visit([&](auto& a) { a.epilogue = ops; }, dev->args);
  if (Status s = op.supports(dev->args); !s) return fail(s);
  auto artifact = op.compile(dev->args);
  if (!artifact) return fail(artifact.status());
  if (Status s = dev->run(op, *artifact); !s) return fail(s);
  if (Status s = synchronize(); !s) return fail(s);
  RunResult r{Status::ok(), {}, {}, {}};
  auto out = dev->download_out(p.out);
  if (!out) return fail(out.status());
  r.out = *out;
  auto second = c.grad ? download(p.scaled, scaled) : download(p.pre, pre);
  if (!second) return fail(second.status());
  r.second = *second;
  if (c.grad) {
    auto part = download(p.partials, partials);
    if (!part) return fail(part.status());
    r.partials = *part;
  }
  return r;
}

/// Ragged M-grouped problems around the tile; I (the backward's N) a multiple of 8, once not of 64,
/// once not of 16 (the forward's halves then 4 mod 8).
std::vector<ProblemSpec> problems_for(const OperatorMetadata& m, const OutputsCase& c) {
  const int64_t tm = m.design.tile_m, tn = m.design.tile_n;
  std::vector<ProblemSpec> specs;
  ProblemSpec s;
  s.a = s.b = DType::bf16;
  s.out = m.constraints.out_dtypes.at(0);
  s.kind = OperationKind::grouped_m;
  s.m = 7 * tm + 3, s.n = 2 * tn + 64, s.k = 200, s.groups = 9, s.trailing = 5;  // an empty and a 1-row group
  specs.push_back(s);
  s.m = tm + 1, s.n = 2 * tn - 16, s.k = 64, s.groups = 3, s.trailing = 7, s.zero_tail = true;  // tile + 1
  specs.push_back(s);
  s.zero_tail = false;
  s.m = tm - 1, s.n = c.grad ? tn + 72 : tn, s.k = 136, s.groups = 2, s.trailing = 0, s.special_groups = false;
  specs.push_back(s);
  // Halves of n / 2 = 4 mod 8 columns: the up half starts 8 bytes off 16, so the forward stores h
  // in column pairs there instead of 16-byte blocks (store_pre_activation). The TMA store takes the
  // halves as planes n / 2 columns apart, which must be 16-byte multiples: n / 2 = 8 mod 64 there.
  const bool tma_halves = m.design.epilogue == Epilogue::tma_store && !c.grad && is_gated(c.act) &&
                          c.gate == GateLayout::concatenated;
  s.m = 2 * tm + 9, s.n = 2 * tn + (tma_halves ? 16 : 8), s.k = 72, s.groups = 3, s.trailing = 1;
  s.special_groups = true;
  specs.push_back(s);
  // The TMA store's backward carries state from tile to tile (its ring, its h loads' parity): enough
  // tiles that every CTA of the persistent grid (and each ping-pong warpgroup) takes several.
  if (c.grad && m.design.epilogue == Epilogue::tma_store) {
    s.m = 320 * tm + 5, s.n = tn + 64, s.k = 64, s.groups = 7, s.trailing = 3, s.special_groups = false;
    specs.push_back(s);
  }
  return specs;
}

void check(const char* what, const HostTensor& got, const Reference& want, Tolerance tol) {
  const Comparison cmp = compare(got, want, tol);
  EXPECT_TRUE(cmp.ok()) << what << ": " << cmp.describe();
}

class Sm90EpilogueOutputsTest : public ::testing::TestWithParam<Param> {};

TEST_P(Sm90EpilogueOutputsTest, matches_the_float64_formulas_on_ragged_groups) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  ScopedEnv trial{{"GEMMOPS_TRIAL_DESIGNS", "1"}};
  const Param& param = GetParam();
  std::mt19937 rng(2468);
  for (const ProblemSpec& spec : problems_for(param.op->metadata(), param.c)) {
    SCOPED_TRACE(spec.describe());
    const OutputsProblem p = make_outputs_problem(spec, param.c, rng);
    const RunResult r = run_case(*param.op, p, param.c, param.gathered);
    ASSERT_TRUE(r.status) << r.status.to_string();
    const Expected e = expected(p, param.c);
    const Tolerance tol = epilogue_tolerance(spec.out, spec.k);
    if (param.c.grad) {
      check("dh", r.out, e.out, tol);
      check("scaled_activation", r.second, e.second, tol);
      // 64 products of dA (|.| <~ k) and act(h): fp32 sums in another order and the fast exponential.
      check("score_grad_partials", r.partials, e.partials, {0x1p-12 * double(spec.k), 0x1p-14});
    } else {
      check("pre_activation", r.second, e.second, tol);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sm90, Sm90EpilogueOutputsTest, ::testing::ValuesIn(params()),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return info.param.op->name() + "_" + info.param.c.label +
                                  (info.param.gathered ? "_gathered" : "");
                         });

// The lists above name registered designs (a misspelt one would drop its cases silently).
TEST(Sm90EpilogueOutputsControl, every_listed_design_is_registered) {
  std::vector<std::string> names;
  for (const OperatorPtr& op : sm90_operators()) names.push_back(op->metadata().design.to_string());
  auto registered = [&](const auto& list) {
    for (const char* d : list) EXPECT_NE(std::find(names.begin(), names.end(), d), names.end()) << d;
  };
  registered(kDesigns);
  registered(kTmaDesigns);
  registered(kGatheredDesigns);
  registered(kTmaGradDesigns);
  for (const char* d : kTmaGradDesigns) EXPECT_TRUE(listed(kTmaDesigns, d)) << d;
}

TEST(Sm90EpilogueOutputsControl, the_check_rejects_the_other_gate_layout) {
  // A negative control: dh computed with the other pairing must fail the comparison above.
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  ScopedEnv trial{{"GEMMOPS_TRIAL_DESIGNS", "1"}};
  const std::vector<Param> all = params();
  ASSERT_FALSE(all.empty());
  const Param& param = all.front();
  ASSERT_EQ(param.c.label, "grad_swiglu_concatenated_scores");
  std::mt19937 rng(77);
  const ProblemSpec spec = problems_for(param.op->metadata(), param.c).front();
  const OutputsProblem p = make_outputs_problem(spec, param.c, rng);
  const RunResult r = run_case(*param.op, p, param.c);
  ASSERT_TRUE(r.status) << r.status.to_string();
  const Tolerance tol = epilogue_tolerance(spec.out, spec.k);
  EXPECT_TRUE(compare(r.out, expected(p, param.c).out, tol).ok());
  EXPECT_FALSE(compare(r.out, expected(p, param.c, GateLayout::interleaved).out, tol).ok());
}

}  // namespace
}  // namespace gemmops::testing
