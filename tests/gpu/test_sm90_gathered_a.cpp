// tests/gpu/test_sm90_gathered_a.cpp: a gathered A (GroupedGemmArguments::a_row_index) on every sm90
// operator that serves it (with the trial opt-in), against the float64 reference: random indices
// with repeats, a permutation, every row the same; ragged groups with empty ones, K not a multiple
// of 64 (nor of 8), rows past the last offset, B N-major; and the host-side refusal of an index
// outside A
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "gemmops/gemmops.hpp"
#include "support/device_check.hpp"
#include "support/scoped_env.hpp"
#include "support/sm90_operators.hpp"

namespace gemmops::testing {
namespace {

enum class IndexKind { random_with_repeats, permutation, all_the_same };

/// One gathered problem: A (rows, K), B (G, K, N), out (TotalM, N) poisoned, offsets and index.
struct GatherProblem {
  HostTensor A, B, out, offsets, index;
  int64_t k = 0;

  GroupedGemmArguments arguments() const {
    GroupedGemmArguments g{A.desc, B.desc, out.desc, DType::fp32, offsets.desc};
    g.a_row_index = index.desc;
    return g;
  }
};

/// `trailing` rows of out lie past the last group (their index entries -1: never read).
/// A's rows `a_row_stride` elements apart (0: K).
GatherProblem make_gather(const OperatorMetadata& m, int64_t rows, int64_t total_m, int64_t n, int64_t k,
                          int64_t groups, int64_t trailing, IndexKind kind, Major b_major, std::mt19937& rng,
                          int64_t a_row_stride = 0) {
  GatherProblem p;
  const DType ab = m.constraints.a_dtypes.at(0);
  p.k = k;
  p.A = HostTensor::strided(ab, {rows, k}, {a_row_stride > 0 ? a_row_stride : k, 1});
  p.B = make_operand(ab, {groups, k, n}, b_major, false, false);
  fill_random(p.A, rng);
  fill_random(p.B, rng);
  p.out = HostTensor::contiguous(m.constraints.out_dtypes.at(0), {total_m, n});
  p.out.poison();
  const std::vector<int32_t> ends = random_group_ends(rng, groups, total_m - trailing, true);
  p.offsets = HostTensor::contiguous(DType::i32, {groups});
  for (int64_t g = 0; g < groups; ++g) p.offsets.set(g, ends[static_cast<size_t>(g)]);
  p.index = HostTensor::contiguous(DType::i32, {total_m});
  std::vector<int32_t> idx(static_cast<size_t>(total_m));
  std::uniform_int_distribution<int32_t> any_row(0, static_cast<int32_t>(rows - 1));
  switch (kind) {
    case IndexKind::random_with_repeats:
      for (int32_t& v : idx) v = any_row(rng);
      break;
    case IndexKind::permutation:  // rows == total_m
      std::iota(idx.begin(), idx.end(), 0);
      std::shuffle(idx.begin(), idx.end(), rng);
      break;
    case IndexKind::all_the_same:
      std::fill(idx.begin(), idx.end(), any_row(rng));
      break;
  }
  for (int64_t r = total_m - trailing; r < total_m; ++r) idx[static_cast<size_t>(r)] = -1;
  for (int64_t r = 0; r < total_m; ++r) p.index.set(r, idx[static_cast<size_t>(r)]);
  return p;
}

void expect_matches_reference(const Operator& op, const GatherProblem& p) {
  auto A = upload(p.A), B = upload(p.B), out = upload(p.out), offsets = upload(p.offsets), index = upload(p.index);
  ASSERT_TRUE(A && B && out && offsets && index);
  GroupedGemmArguments g{on(p.A, *A), on(p.B, *B), on(p.out, *out), DType::fp32, on(p.offsets, *offsets)};
  g.a_row_index = on(p.index, *index);
  const Status supported = op.supports(g);
  ASSERT_TRUE(supported) << supported.to_string();
  ASSERT_EQ(op.workspace_size(g), 0u);
  const Status ran = op.run(g);
  ASSERT_TRUE(ran) << ran.to_string();
  ASSERT_TRUE(synchronize());
  HostTensor result = p.out;
  ASSERT_TRUE(out->copy_to_host(result.storage.data(), result.storage.size()));
  const Comparison c =
      compare(result, reference_result(p.arguments()), default_tolerance(p.out.desc.dtype, p.k));
  EXPECT_TRUE(c.ok()) << c.describe();
}

std::vector<OperatorPtr> gathering_operators() {
  ScopedEnv trial{{"GEMMOPS_TRIAL_DESIGNS", "1"}};
  std::vector<OperatorPtr> ops;
  const Device cuda = Device::cuda(0);
  for (const OperatorPtr& op : sm90_operators_per_path()) {
    GroupedGemmArguments g{TensorDesc::contiguous(op->metadata().constraints.a_dtypes[0], {8, 64}, cuda),
                           TensorDesc::contiguous(op->metadata().constraints.a_dtypes[0], {2, 64, 64}, cuda),
                           TensorDesc::contiguous(op->metadata().constraints.out_dtypes[0], {16, 64}, cuda),
                           DType::fp32, TensorDesc::contiguous(DType::i32, {2}, cuda)};
    g.a_row_index = TensorDesc::contiguous(DType::i32, {16}, cuda);
    if (op->supports(g)) ops.push_back(op);
  }
  return ops;
}

class Sm90GatheredATest : public ::testing::TestWithParam<OperatorPtr> {
 protected:
  ScopedEnv trial_{{"GEMMOPS_TRIAL_DESIGNS", "1"}};
};

TEST_P(Sm90GatheredATest, matches_the_reference_for_random_permuted_and_constant_indices) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  const OperatorMetadata& m = GetParam()->metadata();
  const int64_t unit = m.design.tile_m * m.design.cluster_m, tn = m.design.tile_n;
  std::mt19937 rng(41);
  for (IndexKind kind : {IndexKind::random_with_repeats, IndexKind::permutation, IndexKind::all_the_same}) {
    const int64_t total_m = 4 * unit + 37;
    const int64_t rows = kind == IndexKind::permutation ? total_m : 3 * unit + 5;
    const int64_t trailing = kind == IndexKind::permutation ? 0 : 19;
    SCOPED_TRACE("index kind " + std::to_string(static_cast<int>(kind)));
    expect_matches_reference(*GetParam(),
                             make_gather(m, rows, total_m, 2 * tn + 8, 64 * (m.design.stages + 2), 6, trailing, kind,
                                         Major::k, rng));
  }
}

TEST_P(Sm90GatheredATest, zero_fills_k_tails_serves_ragged_groups_and_refuses_partial_chunks) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  const OperatorMetadata& m = GetParam()->metadata();
  const int64_t unit = m.design.tile_m * m.design.cluster_m, tn = m.design.tile_n;
  std::mt19937 rng(42);
  // K of 200 (a last k-block of 8 of its 64) and 72, B K-major and N-major.
  for (int64_t k : {200, 72}) {
    for (Major b_major : {Major::k, Major::mn}) {
      SCOPED_TRACE("K " + std::to_string(k) + (b_major == Major::mn ? ", B N-major" : ""));
      expect_matches_reference(*GetParam(), make_gather(m, unit + 3, 5 * unit + 40, tn + 72, k, 7, 2 * unit + 13,
                                                        IndexKind::random_with_repeats, b_major, rng));
    }
  }
  // K of 36 (half a 16-byte chunk, A's rows 40 apart): refused with the rule, nothing launched.
  const GatherProblem odd = make_gather(m, unit + 3, 5 * unit + 40, tn + 72, 36, 7, 2 * unit + 13,
                                        IndexKind::random_with_repeats, Major::mn, rng, 40);
  // Its descriptors as fake CUDA tensors: supports() reads no data, and host tensors would be refused
  // for their device before the K rule is reached.
  GroupedGemmArguments fake = odd.arguments();
  for (TensorDesc* t : {&fake.A, &fake.B, &fake.out, &fake.offsets, &*fake.a_row_index}) {
    t->device = Device::cuda(0);
    t->data = nullptr;
  }
  const Status s = GetParam()->supports(fake);
  EXPECT_EQ(s.code(), ErrorCode::unsupported) << s.to_string();
  EXPECT_NE(s.message().find("K must be a multiple of 8 elements; got K 36"), std::string::npos) << s.message();
}

TEST_P(Sm90GatheredATest, every_group_empty_leaves_out_untouched) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  const OperatorMetadata& m = GetParam()->metadata();
  std::mt19937 rng(43);
  const int64_t total_m = 2 * m.design.tile_m + 7;
  expect_matches_reference(*GetParam(), make_gather(m, 9, total_m, m.design.tile_n, 128, 4, total_m,
                                                    IndexKind::random_with_repeats, Major::k, rng));
}

/// out as `op` leaves it for `g` (host tensors uploaded, out poisoned before), or why it could not run.
Status run_on_device(const Operator& op, const GroupedGemmArguments& host, HostTensor& out) {
  auto up = [](const TensorDesc& t) {  // a device copy of a host tensor's bytes
    HostTensor h;
    h.desc = t;
    h.storage.assign(static_cast<const std::byte*>(t.data),
                     static_cast<const std::byte*>(t.data) + t.span_bytes());
    return h;
  };
  std::vector<HostTensor> copies;
  std::vector<DeviceBuffer> buffers;
  auto device = [&](const TensorDesc& t) -> TensorDesc {
    copies.push_back(up(t));
    auto b = upload(copies.back());
    if (!b) return t;
    buffers.push_back(std::move(*b));
    return on(copies.back(), buffers.back());
  };
  GroupedGemmArguments g = host;
  g.A = device(host.A);
  g.B = device(host.B);
  g.offsets = device(host.offsets);
  if (host.a_row_index) g.a_row_index = device(*host.a_row_index);
  if (host.epilogue.row_scale) g.epilogue.row_scale = device(*host.epilogue.row_scale);
  if (host.epilogue.bias) g.epilogue.bias = device(*host.epilogue.bias);
  auto out_buffer = upload(out);
  if (!out_buffer) return out_buffer.status();
  g.out = on(out, *out_buffer);
  GEMMOPS_TRY(op.supports(g));
  GEMMOPS_TRY(op.run(g));
  if (!synchronize()) return internal_error("synchronize failed");
  if (!out_buffer->copy_to_host(out.storage.data(), out.storage.size())) return internal_error("copy back failed");
  return Status::ok();
}

/// A gathered A beside an activation's store, without a second output (the MoE layer's forward without
/// gradients): the same operator on a dense copy of the gathered rows gives the same bits, for the
/// ops the design serves of: SwiGLU on concatenated halves with a row scale, gpt-oss's clamped SwiGLU
/// on interleaved pairs with a bias and a row scale, SiLU with a bias. (The second outputs' cases are
/// in test_sm90_epilogue_outputs.cpp.)
TEST_P(Sm90GatheredATest, with_an_activation_equals_the_dense_copy_bit_for_bit) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("90a");
  const Operator& op = *GetParam();
  const OperatorMetadata& m = op.metadata();
  const int64_t unit = m.design.tile_m * m.design.cluster_m, tn = m.design.tile_n;
  std::mt19937 rng(44);
  const int64_t total_m = 4 * unit + 37, n = 2 * tn, k = 64 * (m.design.stages + 1) + 8, groups = 5;
  const GatherProblem p = make_gather(m, 3 * unit + 5, total_m, n, k, groups, 19, IndexKind::random_with_repeats,
                                      Major::k, rng);
  HostTensor dense = HostTensor::contiguous(p.A.desc.dtype, {total_m, k});
  for (int64_t r = 0; r < total_m; ++r) {
    const auto row = static_cast<int64_t>(p.index.get(r));
    for (int64_t c = 0; c < k; ++c) dense.set(r * k + c, row >= 0 ? p.A.get(row * k + c) : 0.0);
  }
  HostTensor scale = HostTensor::contiguous(DType::fp32, {total_m});
  HostTensor bias = HostTensor::contiguous(DType::fp32, {groups, n});
  fill_random(scale, rng);
  fill_random(bias, rng);
  struct Case { Activation act; GateLayout gate; bool scaled, biased; };
  // (Four ops, not all: each is two kernels compiled cold per design in the suite's run. The plain
  // SwiGLU is moe_experts' forward without gradients: x gathered, no h.)
  const Case cases[] = {{Activation::swiglu, GateLayout::concatenated, false, false},
                        {Activation::swiglu, GateLayout::concatenated, true, false},
                        {Activation::swiglu_oss, GateLayout::interleaved, true, true},
                        {Activation::silu, GateLayout::concatenated, false, true}};
  int served = 0;
  for (const Case& c : cases) {
    const bool gated = c.act == Activation::swiglu || c.act == Activation::swiglu_oss;
    HostTensor gathered_out = HostTensor::contiguous(p.out.desc.dtype, {total_m, gated ? n / 2 : n});
    gathered_out.poison();
    HostTensor dense_out = gathered_out;
    GroupedGemmArguments g = p.arguments();
    g.out = gathered_out.desc;
    g.epilogue.activation = c.act;
    g.epilogue.gate_layout = c.gate;
    if (c.scaled) g.epilogue.row_scale = scale.desc;
    if (c.biased) g.epilogue.bias = bias.desc;
    GroupedGemmArguments fake = g;  // does the design serve this op? (fake CUDA tensors: no data read)
    std::vector<TensorDesc*> operands = {&fake.A, &fake.B, &fake.out, &fake.offsets, &*fake.a_row_index};
    if (fake.epilogue.row_scale) operands.push_back(&*fake.epilogue.row_scale);
    if (fake.epilogue.bias) operands.push_back(&*fake.epilogue.bias);
    for (TensorDesc* t : operands) {
      t->device = Device::cuda(0);
      t->data = nullptr;
    }
    if (!op.supports(fake)) continue;
    ++served;
    const std::string what = std::string(name(c.act)) + (c.gate == GateLayout::interleaved ? " interleaved" : "") +
                             (c.scaled ? ", row scale" : "") + (c.biased ? ", bias" : "");
    SCOPED_TRACE(what);
    Status s = run_on_device(op, g, gathered_out);
    ASSERT_TRUE(s) << s.to_string();
    GroupedGemmArguments d = g;
    d.A = dense.desc;
    d.a_row_index.reset();
    d.out = dense_out.desc;
    s = run_on_device(op, d, dense_out);
    ASSERT_TRUE(s) << s.to_string();
    EXPECT_EQ(gathered_out.storage, dense_out.storage) << "gathered and dense A differ";
  }
  if (!m.constraints.epilogue.activations.empty()) {
    EXPECT_GT(served, 0) << "no op served";
  }
}

std::string operator_name(const ::testing::TestParamInfo<OperatorPtr>& info) { return info.param->name(); }

INSTANTIATE_TEST_SUITE_P(Sm90, Sm90GatheredATest, ::testing::ValuesIn(gathering_operators()), operator_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Sm90GatheredATest);

TEST(Sm90GatheredA, an_index_outside_a_is_refused_on_the_host) {
  std::mt19937 rng(44);
  const OperatorPtr op = sm90_operators_per_path().front();
  GatherProblem p = make_gather(op->metadata(), 10, 64, 64, 64, 2, 0, IndexKind::random_with_repeats, Major::k, rng);
  p.index.set(5, 10);
  const Status s = validate(p.arguments());
  EXPECT_EQ(s.code(), ErrorCode::invalid_argument) << s.to_string();
  EXPECT_NE(s.message().find("a_row_index: values must be rows of A, in [0, 10); got a_row_index[5] = 10"),
            std::string::npos) << s.message();
}

}  // namespace
}  // namespace gemmops::testing
