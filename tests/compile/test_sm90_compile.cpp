// tests/compile/test_sm90_compile.cpp: every registered sm90 operator compiles with NVRTC for sm_90a on
// a machine without a GPU, from fake tensors (descriptions without data)
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gemmops/gemmops.hpp"
#include "support/sm90_operators.hpp"

namespace gemmops {
namespace {

using testing::sm90_operators;
using testing::serves;

/// A fake M-grouped problem the operator's dtypes fit: A (256,128), B (4,128,256) with the majors.
GroupedGemmArguments fake_grouped(const OperatorMetadata& m, Major b_major, Major a_major = Major::k) {
  const DType ab = m.constraints.a_dtypes.at(0), out = m.constraints.out_dtypes.at(0);
  const Device cuda = Device::cuda(0);
  const int64_t G = 4, M = 256, K = 128, N = 256;
  std::vector<int64_t> a_strides = a_major == Major::k ? std::vector<int64_t>{K, 1} : std::vector<int64_t>{1, M};
  std::vector<int64_t> b_strides = b_major == Major::k ? std::vector<int64_t>{N * K, 1, K}
                                                       : std::vector<int64_t>{K * N, N, 1};
  return GroupedGemmArguments{TensorDesc(ab, {M, K}, a_strides, cuda), TensorDesc(ab, {G, K, N}, b_strides, cuda),
                              TensorDesc::contiguous(out, {M, N}, cuda), DType::fp32,
                              TensorDesc::contiguous(DType::i32, {G}, cuda)};
}

/// The weight-gradient layout of the K-grouped form: A (M,TotalK) M-major (a transposed
/// activation), B (TotalK,N) N-major (the output gradient), out (G,M,N).
GroupedGemmArguments fake_grouped_k(const OperatorMetadata& m) {
  const DType ab = m.constraints.a_dtypes.at(0), out = m.constraints.out_dtypes.at(0);
  const Device cuda = Device::cuda(0);
  const int64_t G = 4, M = 256, K = 512, N = 256;
  return GroupedGemmArguments{TensorDesc(ab, {M, K}, {1, M}, cuda), TensorDesc::contiguous(ab, {K, N}, cuda),
                              TensorDesc::contiguous(out, {G, M, N}, cuda), DType::fp32,
                              TensorDesc::contiguous(DType::i32, {G}, cuda)};
}

/// Compiles `args` and checks the artifact names the kernel and ptxas kept wgmma asynchronous and,
/// unless this is the debugging build with the barrier watchdog, every value in registers.
void expect_compiles(const Operator& op, const Arguments& args) {
  Status s = op.supports(args);
  ASSERT_TRUE(s) << s.to_string();
  auto artifact = op.compile(args);
  ASSERT_TRUE(artifact) << artifact.status().to_string();
  EXPECT_EQ(artifact->operator_name(), op.name());
  EXPECT_NE(artifact->description().find("grouped_gemm_kernel"), std::string::npos) << artifact->description();
  // ptxas serialised the wgmma pipeline, a silent 2x loss: C7518 (accumulators selected by lane),
  // C7520 (a branch between wgmmas, e.g. skipping a dead M atom) and the rest of that family.
  EXPECT_EQ(artifact->description().find("wgmma.mma_async instructions are serialized"), std::string::npos)
      << artifact->description();
  // Accumulators take up to 128 of a consumer thread's 232 registers: a spill is a silent slowdown.
  // The watchdog's timed waits take registers of their own (the 128x256 kernels then spill).
  const bool watchdog_build = std::getenv("GEMMOPS_KERNEL_WATCHDOG") != nullptr;
  if (!watchdog_build) {
    EXPECT_EQ(artifact->description().find("spilled"), std::string::npos) << artifact->description();
  }
}

class Sm90CompileTest : public ::testing::TestWithParam<OperatorPtr> {};

TEST_P(Sm90CompileTest, compiles_for_sm90a_from_fake_tensors) {
  const OperatorPtr& op = GetParam();
  // Every operator once with B K-major; N-major once per design (on the bf16 -> bf16 operators).
  std::vector<Major> majors{Major::k};
  if (op->metadata().constraints.a_dtypes[0] == DType::bf16 && op->metadata().constraints.out_dtypes[0] == DType::bf16)
    majors.push_back(Major::mn);
  for (Major b_major : majors) {
    SCOPED_TRACE(std::string("B ") + std::string(name(b_major)));
    expect_compiles(*op, fake_grouped(op->metadata(), b_major));
  }
  if (majors.size() > 1) {
    SCOPED_TRACE("A mn-major (dense)");
    const OperatorMetadata& m = op->metadata();
    const Device cuda = Device::cuda(0);
    const DType ab = m.constraints.a_dtypes.at(0);
    expect_compiles(*op, GemmArguments{TensorDesc(ab, {256, 128}, {1, 256}, cuda), TensorDesc::contiguous(ab, {128, 256}, cuda),
                                       TensorDesc::contiguous(m.constraints.out_dtypes.at(0), {256, 256}, cuda),
                                       DType::fp32});
  }
}

TEST_P(Sm90CompileTest, refuses_the_m_grouped_form_with_an_m_major_a_and_says_why) {
  // A group may start at any row; TMA cannot start an M-major box there.
  const Arguments args = fake_grouped(GetParam()->metadata(), Major::k, Major::mn);
  const Status s = GetParam()->supports(args);
  EXPECT_EQ(s.code(), ErrorCode::unsupported) << s.to_string();
  EXPECT_NE(s.message().find("A: M-grouped sm90 kernels need A K-major"), std::string::npos) << s.message();
}

TEST_P(Sm90CompileTest, refuses_a_k_grouped_out_whose_groups_do_not_stack_and_says_why) {
  if (!serves(*GetParam(), OperationKind::grouped_k)) GTEST_SKIP() << "the design serves no K-grouped form";
  GroupedGemmArguments g = fake_grouped_k(GetParam()->metadata());
  const int64_t G = g.out.shape[0], M = g.out.shape[1], N = g.out.shape[2];
  g.out = TensorDesc(g.out.dtype, {G, M, N}, {(M + 1) * N, N, 1}, g.out.device);  // a spare row per group
  const Status s = GetParam()->supports(g);
  EXPECT_EQ(s.code(), ErrorCode::unsupported) << s.to_string();
  EXPECT_NE(s.message().find("out: K-grouped sm90 kernels need the groups' results stacked by rows"),
            std::string::npos) << s.message();
}

TEST(Sm90CompileKMajorK, every_design_compiles_the_k_grouped_form_with_k_major_operands) {
  // K-major operands make the kernel start K-grouped k-blocks 8-aligned and clear the head.
  const Device cuda = Device::cuda(0);
  const int64_t G = 4, M = 256, K = 512, N = 256;
  const Arguments args = GroupedGemmArguments{TensorDesc::contiguous(DType::bf16, {M, K}, cuda),
                                              TensorDesc(DType::bf16, {K, N}, {1, K}, cuda),
                                              TensorDesc::contiguous(DType::bf16, {G, M, N}, cuda), DType::fp32,
                                              TensorDesc::contiguous(DType::i32, {G}, cuda)};
  int compiled = 0;
  for (const OperatorPtr& op : sm90_operators()) {
    const auto& c = op->metadata().constraints;
    if (c.a_dtypes[0] != DType::bf16 || c.out_dtypes[0] != DType::bf16 || !serves(*op, OperationKind::grouped_k)) continue;
    SCOPED_TRACE(op->name());
    expect_compiles(*op, args);
    ++compiled;
  }
  EXPECT_GE(compiled, 4);
}

TEST_P(Sm90CompileTest, compiles_the_k_grouped_form_in_the_weight_gradient_layout) {
  const OperatorPtr& op = GetParam();
  const Arguments args = fake_grouped_k(op->metadata());
  if (!serves(*op, OperationKind::grouped_k)) {
    // Only designs whose consumers hold 192 accumulators a thread refuse it (their producer's 24
    // registers: 128x192 and 192x128 ping-pong), and those with a cluster along N; they say so.
    const Design& d = op->metadata().design;
    EXPECT_TRUE(d.tile_m * d.tile_n == 128 * 192 || d.cluster_n > 1) << op->name();
    const Status s = op->supports(args);
    EXPECT_FALSE(s);
    EXPECT_NE(s.message().find("operation: must be one of"), std::string::npos) << s.message();
    return;
  }
  expect_compiles(*op, args);
}

TEST_P(Sm90CompileTest, run_refuses_fake_tensors) {
  const OperatorPtr& op = GetParam();
  const Arguments args = fake_grouped(op->metadata(), Major::k);
  Status s = op->run(args, Artifact{});
  EXPECT_EQ(s.code(), ErrorCode::invalid_argument) << s.to_string();
  EXPECT_NE(s.message().find("fake"), std::string::npos) << s.message();
}

std::string operator_name(const ::testing::TestParamInfo<OperatorPtr>& info) { return info.param->name(); }

INSTANTIATE_TEST_SUITE_P(Sm90, Sm90CompileTest, ::testing::ValuesIn(sm90_operators()), operator_name);

TEST(Sm90Watchdog, the_debugging_build_with_a_barrier_watchdog_compiles_and_keeps_wgmma_asynchronous) {
  // GEMMOPS_KERNEL_WATCHDOG=<seconds> adds a timed-out report to every barrier wait; a ping-pong
  // design (turn waits) and a 2-CTA one (cluster barriers), forward and weight-gradient forms.
  struct Watchdog {
    Watchdog() { ::setenv("GEMMOPS_KERNEL_WATCHDOG", "20", 1); }
    ~Watchdog() { ::unsetenv("GEMMOPS_KERNEL_WATCHDOG"); }
  } on;
  int compiled = 0;
  for (const OperatorPtr& op : sm90_operators()) {
    const std::string d = op->metadata().design.to_string();
    if (op->metadata().constraints.a_dtypes[0] != DType::bf16 || op->metadata().constraints.out_dtypes[0] != DType::bf16)
      continue;
    if (d != "128x128x64_c1x1_s6_pingpong" && d != "128x256x64_c2x1_s3_coop_tma") continue;
    SCOPED_TRACE(op->name());
    expect_compiles(*op, fake_grouped(op->metadata(), Major::k));
    expect_compiles(*op, fake_grouped_k(op->metadata()));
    ++compiled;
  }
  EXPECT_GE(compiled, 2);
}

TEST(Sm90Registry, every_design_is_registered_for_bf16_and_fp16) {
  // Each design serves both 16-bit input types, with a 16-bit output at least.
  std::map<std::string, std::set<DType>> inputs_by_design;
  for (const OperatorPtr& op : sm90_operators())
    inputs_by_design[op->metadata().design.to_string()].insert(op->metadata().constraints.a_dtypes.at(0));
  EXPECT_GE(inputs_by_design.size(), 4u);
  for (const auto& [design, inputs] : inputs_by_design)
    EXPECT_EQ(inputs, (std::set<DType>{DType::bf16, DType::fp16})) << design;
}

}  // namespace
}  // namespace gemmops
