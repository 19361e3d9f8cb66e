// tests/unit/test_cpu_epilogue.cpp: the CPU operators' epilogue ops (every activation x gate layout x
// bias x row scale, M-grouped, dense and batched, bf16/fp16/fp32 out) against a float64 loop
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gemmops/plan.hpp"
#include "gemmops/registry.hpp"
#include "support/host_tensor.hpp"
#include "support/reference.hpp"

namespace gemmops::testing {
namespace {

// --- the reference: epilogue.hpp's formula, in double -------------------------------------------

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

double act(Activation a, double x) {
  switch (a) {
    case Activation::silu: return x * sigmoid(x);
    case Activation::gelu_tanh: return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case Activation::relu_squared: return std::max(x, 0.0) * std::max(x, 0.0);
    default: return x;
  }
}

double gated(const EpilogueOps& e, double gate, double up) {
  if (e.activation == Activation::swiglu) return gate * sigmoid(gate) * up;
  const double g = std::min(gate, double(e.limit)), u = std::clamp(up, -double(e.limit), double(e.limit));
  return (u + 1.0) * g * sigmoid(double(e.alpha) * g);
}

// One row of the product (n values, bias added) -> the row of out.
std::vector<double> epilogue_row(const EpilogueOps& e, std::vector<double> v, double scale) {
  std::vector<double> r;
  const std::size_t n = v.size();
  if (is_gated(e.activation)) {
    for (std::size_t j = 0; j < n / 2; ++j) {
      const bool inter = e.gate_layout == GateLayout::interleaved;
      r.push_back(gated(e, v[inter ? 2 * j : j], v[inter ? 2 * j + 1 : n / 2 + j]));
    }
  } else {
    for (double x : v) r.push_back(act(e.activation, x));
  }
  for (double& x : r) x *= scale;
  return r;
}

// --- problems ------------------------------------------------------------------------------------

// aligned: M-grouped with groups starting at multiples of 4; masked: (G, MaxM) rows with counts.
enum class Form { grouped_m, gemm, batched, aligned, masked };
const char* form_name(Form f) {
  switch (f) {
    case Form::grouped_m: return "grouped_m";
    case Form::gemm: return "gemm";
    case Form::batched: return "batched";
    case Form::aligned: return "aligned";
    case Form::masked: return "masked";
  }
  return "";
}

struct Case {
  Form form;
  DType out_dtype;
  Activation activation;
  GateLayout layout;
  std::optional<DType> bias;  // its dtype, when present
  bool row_scale;
  int64_t n = 10;  // the product's columns
};

std::string describe(const Case& c) {
  return std::string(form_name(c.form)) + " out " + std::string(name(c.out_dtype)) + " " +
         std::string(name(c.activation)) + " (" + std::string(name(c.layout)) + ") bias " +
         (c.bias ? std::string(name(*c.bias)) : "none") + " row_scale " + (c.row_scale ? "yes" : "no") + " n " +
         std::to_string(c.n);
}

// Values that bf16 holds exactly (k/8 in [-2, 2]): the fp32 product is exact, only the epilogue rounds.
void fill(HostTensor& t, std::mt19937& rng, double lo = -2.0, double hi = 2.0) {
  std::uniform_int_distribution<int> d(int(lo * 8), int(hi * 8));
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, d(rng) / 8.0);
}

struct Problem {
  HostTensor A, B, out, offsets, bias, row_scale;
  int64_t rows = 0;                 // rows of out in all (TotalM, M, L*M)
  std::vector<int64_t> group_of;    // bias row of each row of out; -1: past offsets[G-1]
};

constexpr int64_t kK = 7;
// Ragged groups: an empty one, a one-row one; rows 9..11 lie past offsets[G-1].
const std::vector<int32_t> kEnds = {3, 3, 4, 9};
constexpr int64_t kTotalM = 12, kM = 5, kL = 3;
// Aligned to 4: group 0 rows 0..2, group 1 row 4, group 2 empty (starts at 8), group 3 row 8;
// rows 3 and 5..7 are padding, 9..11 lie past offsets[G-1].
constexpr int32_t kAlignment = 4;
const std::vector<int32_t> kAlignedEnds = {3, 5, 8, 9};
// Masked: G = 4 groups of MaxM = 4 rows, full, empty, one row, two rows.
const std::vector<int32_t> kCounts = {4, 0, 1, 2};
constexpr int64_t kMaxM = 4;

Problem make_problem(const Case& c, std::mt19937& rng) {
  Problem p;
  const DType ab = DType::bf16;
  const int64_t n = c.n, out_n = is_gated(c.activation) ? n / 2 : n;
  const int64_t groups = static_cast<int64_t>(kEnds.size());
  switch (c.form) {
    case Form::grouped_m:
      p.A = HostTensor::contiguous(ab, {kTotalM, kK});
      p.B = HostTensor::contiguous(ab, {groups, kK, n});
      p.out = HostTensor::contiguous(c.out_dtype, {kTotalM, out_n});
      p.offsets = HostTensor::contiguous(DType::i32, {groups});
      for (int64_t g = 0; g < groups; ++g) p.offsets.set(g, kEnds[static_cast<size_t>(g)]);
      p.rows = kTotalM;
      for (int64_t r = 0, g = 0; r < kTotalM; ++r) {
        while (g < groups && r >= kEnds[static_cast<size_t>(g)]) ++g;
        p.group_of.push_back(g < groups ? g : -1);
      }
      if (c.bias) p.bias = HostTensor::contiguous(*c.bias, {groups, n});
      if (c.row_scale) p.row_scale = HostTensor::contiguous(DType::fp32, {kTotalM});
      break;
    case Form::aligned:
      p.A = HostTensor::contiguous(ab, {kTotalM, kK});
      p.B = HostTensor::contiguous(ab, {groups, kK, n});
      p.out = HostTensor::contiguous(c.out_dtype, {kTotalM, out_n});
      p.offsets = HostTensor::contiguous(DType::i32, {groups});
      for (int64_t g = 0; g < groups; ++g) p.offsets.set(g, kAlignedEnds[static_cast<size_t>(g)]);
      p.rows = kTotalM;
      p.group_of.assign(kTotalM, -1);
      for (int64_t g = 0, start = 0; g < groups; ++g) {
        start = (start + kAlignment - 1) / kAlignment * kAlignment;
        for (int64_t r = start; r < kAlignedEnds[static_cast<size_t>(g)]; ++r) p.group_of[static_cast<size_t>(r)] = g;
        start = kAlignedEnds[static_cast<size_t>(g)];
      }
      if (c.bias) p.bias = HostTensor::contiguous(*c.bias, {groups, n});
      if (c.row_scale) p.row_scale = HostTensor::contiguous(DType::fp32, {kTotalM});
      break;
    case Form::masked:
      p.A = HostTensor::contiguous(ab, {groups, kMaxM, kK});
      p.B = HostTensor::contiguous(ab, {groups, kK, n});
      p.out = HostTensor::contiguous(c.out_dtype, {groups, kMaxM, out_n});
      p.offsets = HostTensor::contiguous(DType::i32, {groups});
      for (int64_t g = 0; g < groups; ++g) p.offsets.set(g, kCounts[static_cast<size_t>(g)]);
      p.rows = groups * kMaxM;
      for (int64_t r = 0; r < p.rows; ++r)
        p.group_of.push_back(r % kMaxM < kCounts[static_cast<size_t>(r / kMaxM)] ? r / kMaxM : -1);
      if (c.bias) p.bias = HostTensor::contiguous(*c.bias, {groups, n});
      if (c.row_scale) p.row_scale = HostTensor::contiguous(DType::fp32, {groups, kMaxM});
      break;
    case Form::gemm:
      p.A = HostTensor::contiguous(ab, {kM, kK});
      p.B = HostTensor::contiguous(ab, {kK, n});
      p.out = HostTensor::contiguous(c.out_dtype, {kM, out_n});
      p.rows = kM;
      p.group_of.assign(kM, 0);
      if (c.bias) p.bias = HostTensor::contiguous(*c.bias, {n});
      if (c.row_scale) p.row_scale = HostTensor::contiguous(DType::fp32, {kM});
      break;
    case Form::batched:
      p.A = HostTensor::contiguous(ab, {kL, kM, kK});
      p.B = HostTensor::contiguous(ab, {kL, kK, n});
      p.out = HostTensor::contiguous(c.out_dtype, {kL, kM, out_n});
      p.rows = kL * kM;
      for (int64_t r = 0; r < p.rows; ++r) p.group_of.push_back(r / kM);
      if (c.bias) p.bias = HostTensor::contiguous(*c.bias, {kL, n});
      if (c.row_scale) p.row_scale = HostTensor::contiguous(DType::fp32, {kL, kM});
      break;
  }
  fill(p.A, rng, -1.0, 1.0);
  fill(p.B, rng, -1.0, 1.0);
  if (c.bias) fill(p.bias, rng);
  if (c.row_scale) fill(p.row_scale, rng, 0.25, 1.5);
  p.out.poison();
  return p;
}

EpilogueOps ops_of(const Case& c, const Problem& p) {
  EpilogueOps e;
  e.activation = c.activation;
  e.gate_layout = c.layout;
  e.alpha = 1.702f;
  e.limit = 1.25f;  // small, so that the clamps of swiglu_oss bite
  if (c.bias) e.bias = p.bias.desc;
  if (c.row_scale) e.row_scale = p.row_scale.desc;
  return e;
}

Arguments arguments_of(const Case& c, Problem& p, const EpilogueOps& e, bool zero_tail = false) {
  if (c.form == Form::grouped_m || c.form == Form::aligned || c.form == Form::masked) {
    GroupedGemmArguments g{p.A.desc, p.B.desc, p.out.desc, DType::fp32, p.offsets.desc, zero_tail};
    if (c.form == Form::aligned) g.group_alignment = kAlignment;
    g.epilogue = e;
    return g;
  }
  GemmArguments g{p.A.desc, p.B.desc, p.out.desc, DType::fp32};
  g.epilogue = e;
  return g;
}

// Expected out (row-major, rows x out_n); rows past offsets[G-1] hold nothing (NaN).
std::vector<double> expected(const Case& c, const Problem& p, const EpilogueOps& e) {
  // The product alone: the same arguments with a full-width fake out and no ops.
  GroupedGemmArguments g{p.A.desc, p.B.desc, TensorDesc::contiguous(DType::fp32, {p.rows, c.n}), DType::fp32,
                         p.offsets.desc};
  GemmArguments d{p.A.desc, p.B.desc,
                  c.form == Form::batched ? TensorDesc::contiguous(DType::fp32, {kL, kM, c.n})
                                          : TensorDesc::contiguous(DType::fp32, {kM, c.n}),
                  DType::fp32};
  if (c.form == Form::aligned) g.group_alignment = kAlignment;
  GroupedGemmArguments masked{p.A.desc, p.B.desc, TensorDesc::contiguous(DType::fp32, {4, kMaxM, c.n}), DType::fp32,
                              p.offsets.desc};
  const std::vector<double> product = c.form == Form::masked                                  ? reference(masked)
                                      : c.form == Form::grouped_m || c.form == Form::aligned ? reference(g)
                                                                                              : reference(d);
  std::vector<double> want;
  for (int64_t r = 0; r < p.rows; ++r) {
    const int64_t group = p.group_of[static_cast<size_t>(r)];
    const int64_t out_n = is_gated(c.activation) ? c.n / 2 : c.n;
    if (group < 0) {
      want.insert(want.end(), static_cast<size_t>(out_n), std::nan(""));
      continue;
    }
    std::vector<double> v(product.begin() + r * c.n, product.begin() + (r + 1) * c.n);
    if (e.bias)
      for (int64_t j = 0; j < c.n; ++j) v[static_cast<size_t>(j)] += p.bias.get((p.bias.desc.rank() == 2 ? group * c.n : 0) + j);
    const std::vector<double> row = epilogue_row(e, v, e.row_scale ? p.row_scale.get(r) : 1.0);
    want.insert(want.end(), row.begin(), row.end());
  }
  return want;
}

double tolerance(DType t, double v) {
  const double rel = t == DType::bf16 ? 1.0 / 128 : t == DType::fp16 ? 1.0 / 1024 : 1e-5;
  return rel * std::abs(v) + rel * 0.25 + 1e-6;
}

// The first element of `got` (out, row-major) that misses `want`; "" when all match. Rows past
// offsets[G-1] (want NaN) must still hold out's poison bytes.
std::string mismatch(const HostTensor& out, const std::vector<double>& want, const HostTensor& poison) {
  for (int64_t i = 0; i < out.numel(); ++i) {
    const double w = want[static_cast<size_t>(i)];
    if (std::isnan(w)) {
      if (std::memcmp(out.at(i), poison.at(i), size_of(out.desc.dtype)) != 0)
        return "element " + std::to_string(i) + " past offsets[G-1] was written";
      continue;
    }
    const double got = out.get(i);
    if (!(std::abs(got - w) <= tolerance(out.desc.dtype, w)))
      return "element " + std::to_string(i) + ": got " + std::to_string(got) + ", want " + std::to_string(w);
  }
  return "";
}

std::vector<Case> every_case(Form form, DType out, int64_t n = 10) {
  std::vector<Case> cases;
  for (Activation a : kAllActivations)
    for (GateLayout layout : kAllGateLayouts) {
      if (!is_gated(a) && layout == GateLayout::interleaved) continue;  // the layout only pairs gated columns
      for (std::optional<DType> bias : {std::optional<DType>{}, std::optional<DType>{DType::fp32},
                                        std::optional<DType>{out}})
        for (bool scale : {false, true}) cases.push_back({form, out, a, layout, bias, scale, n});
    }
  return cases;
}

void run_case(const Case& c, std::mt19937& rng) {
  SCOPED_TRACE(describe(c));
  Problem p = make_problem(c, rng);
  const HostTensor poison = p.out;
  const EpilogueOps e = ops_of(c, p);
  const Arguments args = arguments_of(c, p, e);
  const std::vector<OperatorPtr> ops = get_operators(args, Target::cpu());
  ASSERT_FALSE(ops.empty()) << get_rejections(args, Target::cpu()).size();
  ASSERT_EQ(ops[0]->metadata().provider, "cpu");
  ASSERT_TRUE(ops[0]->run(args, {}, nullptr, {})) << ops[0]->run(args, {}, nullptr, {}).to_string();
  EXPECT_EQ(mismatch(p.out, expected(c, p, e), poison), "");
}

TEST(CpuEpilogue, every_op_on_m_grouped_ragged_groups) {
  std::mt19937 rng(11);
  for (DType out : {DType::bf16, DType::fp16, DType::fp32})
    for (const Case& c : every_case(Form::grouped_m, out)) run_case(c, rng);
}

TEST(CpuEpilogue, every_op_on_dense_gemm) {
  std::mt19937 rng(12);
  for (DType out : {DType::bf16, DType::fp16, DType::fp32})
    for (const Case& c : every_case(Form::gemm, out)) run_case(c, rng);
}

TEST(CpuEpilogue, every_op_on_batched_gemm) {
  std::mt19937 rng(13);
  for (DType out : {DType::bf16, DType::fp16, DType::fp32})
    for (const Case& c : every_case(Form::batched, out)) run_case(c, rng);
}

TEST(CpuEpilogue, every_op_on_aligned_groups_leaves_the_padding_untouched) {
  std::mt19937 rng(21);
  for (DType out : {DType::bf16, DType::fp32})
    for (const Case& c : every_case(Form::aligned, out)) run_case(c, rng);
}

TEST(CpuEpilogue, every_op_on_masked_groups_writes_only_counted_rows) {
  std::mt19937 rng(22);
  for (DType out : {DType::bf16, DType::fp32})
    for (const Case& c : every_case(Form::masked, out)) run_case(c, rng);
}

TEST(CpuEpilogue, gated_pairs_span_the_blocked_gemms_column_tiles) {
  std::mt19937 rng(14);
  for (Activation a : {Activation::swiglu, Activation::swiglu_oss})
    for (GateLayout layout : kAllGateLayouts)
      run_case({Form::grouped_m, DType::bf16, a, layout, DType::fp32, true, 600}, rng);
}

TEST(CpuEpilogue, zero_tail_writes_zeros_past_the_last_group_not_the_ops) {
  std::mt19937 rng(15);
  const Case c{Form::grouped_m, DType::bf16, Activation::swiglu, GateLayout::concatenated, DType::fp32, true};
  Problem p = make_problem(c, rng);
  const EpilogueOps e = ops_of(c, p);
  const Arguments args = arguments_of(c, p, e, /*zero_tail=*/true);
  ASSERT_TRUE(get_operators(args, Target::cpu())[0]->run(args, {}, nullptr, {}));
  std::vector<double> want = expected(c, p, e);
  for (double& w : want)
    if (std::isnan(w)) w = 0.0;
  EXPECT_EQ(mismatch(p.out, want, p.out), "");
}

TEST(CpuEpilogue, the_checker_rejects_the_other_gate_layouts_result) {
  std::mt19937 rng(16);
  const Case c{Form::gemm, DType::fp32, Activation::swiglu, GateLayout::interleaved, std::nullopt, false};
  Problem p = make_problem(c, rng);
  const HostTensor poison = p.out;
  const EpilogueOps e = ops_of(c, p);
  const Arguments args = arguments_of(c, p, e);
  ASSERT_TRUE(get_operators(args, Target::cpu())[0]->run(args, {}, nullptr, {}));
  EpilogueOps other = e;
  other.gate_layout = GateLayout::concatenated;
  EXPECT_NE(mismatch(p.out, expected(c, p, other), poison), "");
  EXPECT_EQ(mismatch(p.out, expected(c, p, e), poison), "");
}

TEST(CpuEpilogue, a_plan_runs_with_each_calls_bias_and_row_scale) {
  std::mt19937 rng(17);
  const Case c{Form::grouped_m, DType::fp32, Activation::silu, GateLayout::concatenated, DType::fp32, true};
  Problem p = make_problem(c, rng), q = make_problem(c, rng);
  const EpilogueOps e = ops_of(c, p);
  Result<Plan> plan = make_plan(arguments_of(c, p, e), Target::cpu());
  ASSERT_TRUE(plan) << plan.status().to_string();
  const HostTensor poison = q.out;
  OperandData d{q.A.desc.data, q.B.desc.data, q.out.desc.data, q.offsets.desc.data, q.bias.desc.data,
                q.row_scale.desc.data};
  ASSERT_TRUE(plan->run(d));
  EXPECT_EQ(mismatch(q.out, expected(c, q, ops_of(c, q)), poison), "");
  d.bias = nullptr;  // the layout has a bias: a call without one is refused, not served without
  const Status s = plan->run(d);
  EXPECT_EQ(s.code(), ErrorCode::invalid_argument);
  EXPECT_EQ(s.message(), "epilogue.bias: run needs data; got a fake tensor (no data pointer)");
}

}  // namespace
}  // namespace gemmops::testing
