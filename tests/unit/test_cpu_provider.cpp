// tests/unit/test_cpu_provider.cpp: the CPU operators' registration, metadata, support and compile
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "cpu/cpu_operator.hpp"
#include "cpu/cpu_provider.hpp"
#include "cpu/microkernel.hpp"
#include "support/compare.hpp"
#include "support/random_problems.hpp"
#include "support/reference.hpp"

namespace gemmops::testing {
namespace {

TEST(CpuProvider, registers_one_operator_per_operation_kind) {
  Registry r;
  cpu::register_cpu_operators(r);
  const std::vector<OperatorPtr> all = r.all();
  ASSERT_EQ(all.size(), 6u);
  for (const char* n : {"cpu_gemm", "cpu_batched_gemm", "cpu_grouped_gemm_m", "cpu_grouped_gemm_k",
                        "cpu_grouped_gemm_n", "cpu_grouped_gemm_m_masked"}) {
    const OperatorPtr op = r.find(n);
    ASSERT_NE(op, nullptr) << n;
    EXPECT_EQ(op->metadata().provider, "cpu");
    EXPECT_TRUE(op->metadata().target.is_cpu());
    EXPECT_EQ(op->metadata().design.schedule, Schedule::cpu_blocked);
  }
}

TEST(CpuProvider, discovery_finds_the_operator_of_the_problem_kind) {
  Registry r;
  cpu::register_cpu_operators(r);
  std::mt19937 rng(3);
  for (OperationKind kind : kAllOperationKinds) {
    ProblemSpec s;
    s.kind = kind;
    s.groups = kind == OperationKind::gemm ? 1 : 3;
    HostProblem p = make_problem(s, rng);
    const std::vector<OperatorPtr> ops = r.get_operators(p.arguments(), Target::cpu());
    ASSERT_EQ(ops.size(), 1u) << name(kind);
    EXPECT_EQ(ops[0]->name(), "cpu_" + std::string(name(kind)));
  }
}

TEST(CpuProvider, refuses_mixed_non_fp8_inputs_and_accepts_the_fp8_mix) {
  std::mt19937 rng(5);
  ProblemSpec s;
  s.kind = OperationKind::grouped_m, s.a = DType::bf16, s.b = DType::fp16;
  HostProblem bad = make_problem(s, rng);
  const cpu::CpuOperator op(s.kind);
  const Status refused = op.supports(bad.arguments());
  EXPECT_FALSE(refused.is_ok());
  EXPECT_NE(refused.message().find("B"), std::string::npos) << refused.message();
  s.a = DType::e4m3, s.b = DType::e5m2;
  HostProblem good = make_problem(s, rng);
  EXPECT_TRUE(op.supports(good.arguments()).is_ok());
}

TEST(CpuProvider, refuses_an_int32_out_and_cuda_tensors) {
  std::mt19937 rng(5);
  ProblemSpec s;
  s.kind = OperationKind::gemm, s.groups = 1, s.out = DType::i32;
  HostProblem p = make_problem(s, rng);
  const cpu::CpuOperator op(s.kind);
  EXPECT_FALSE(op.supports(p.arguments()).is_ok());
  GemmArguments on_gpu{p.A.desc, p.B.desc, p.out.desc, DType::fp32};
  on_gpu.out.dtype = DType::bf16;
  on_gpu.A.device = on_gpu.B.device = on_gpu.out.device = Device::cuda(0);
  EXPECT_FALSE(op.supports(on_gpu).is_ok());
}

TEST(CpuProvider, compile_returns_an_artifact_named_after_the_operator) {
  std::mt19937 rng(5);
  ProblemSpec s;
  HostProblem p = make_problem(s, rng);
  const cpu::CpuOperator op(s.kind);
  Result<Artifact> a = op.compile(p.arguments());
  ASSERT_TRUE(a.has_value()) << a.status().to_string();
  EXPECT_EQ(a->operator_name(), "cpu_grouped_gemm_m");
  EXPECT_TRUE(op.run(p.arguments(), *a).is_ok());
}

TEST(CpuProvider, zero_tail_zeroes_the_rows_past_the_last_group_and_leaves_them_otherwise) {
  std::mt19937 rng(11);
  ProblemSpec s;
  s.kind = OperationKind::grouped_m, s.m = 40, s.trailing = 7;
  const cpu::CpuOperator op(s.kind);
  for (bool zero_tail : {false, true}) {
    HostProblem p = make_problem(s, rng);
    GroupedGemmArguments args = std::get<GroupedGemmArguments>(p.arguments());
    args.zero_tail = zero_tail;
    ASSERT_TRUE(op.run(args).is_ok());
    for (int64_t r = s.m - s.trailing; r < s.m; ++r)
      for (int64_t c = 0; c < s.n; ++c) {
        const int64_t e = r * s.n + c;
        // The poison (all bits set) reads as NaN.
        if (zero_tail) EXPECT_EQ(p.out.get(e), 0.0) << r << "," << c;
        else EXPECT_TRUE(std::isnan(p.out.get(e))) << r << "," << c;
      }
  }
}

// Problems with no work, as numpy hands them over: every array without elements has zero strides
// and a pointer to no memory of its own. Discovery finds the CPU operator and it runs them.
TEST(CpuProvider, runs_problems_without_elements) {
  alignas(16) static float nothing[4];  // what an empty array points at
  std::vector<float> a(8 * 16, 1.0f), b(3 * 16 * 8, 1.0f), out(8 * 8, -1.0f), out_k0(16 * 8, -1.0f);
  std::vector<int32_t> ends = {0, 0, 0};
  const Device cpu = Device::cpu();
  auto empty = [&](DType t, std::vector<int64_t> shape) {
    return TensorDesc(t, shape, std::vector<int64_t>(shape.size(), 0), cpu, nothing);
  };
  auto real = [&](DType t, std::vector<int64_t> shape, void* data) {
    return TensorDesc::contiguous(t, std::move(shape), cpu, data);
  };
  const TensorDesc offsets3 = real(DType::i32, {3}, ends.data());
  std::vector<std::pair<const char*, Arguments>> cases = {
      {"grouped_m TotalM=0", GroupedGemmArguments{empty(DType::fp32, {0, 16}), real(DType::fp32, {3, 16, 8}, b.data()),
                                                  empty(DType::fp32, {0, 8}), DType::fp32, offsets3}},
      {"grouped_m N=0", GroupedGemmArguments{real(DType::fp32, {8, 16}, a.data()), empty(DType::fp32, {3, 16, 0}),
                                             empty(DType::fp32, {8, 0}), DType::fp32, offsets3}},
      {"grouped_m G=0", GroupedGemmArguments{real(DType::fp32, {8, 16}, a.data()), empty(DType::fp32, {0, 16, 8}),
                                             real(DType::fp32, {8, 8}, out.data()), DType::fp32,
                                             empty(DType::i32, {0}), true}},
      {"grouped_k G=0", GroupedGemmArguments{real(DType::fp32, {8, 16}, a.data()), real(DType::fp32, {16, 8}, b.data()),
                                             empty(DType::fp32, {0, 8, 8}), DType::fp32, empty(DType::i32, {0})}},
      {"gemm M=0", GemmArguments{empty(DType::fp32, {0, 16}), real(DType::fp32, {16, 8}, b.data()),
                                 empty(DType::fp32, {0, 8}), DType::fp32}},
      {"batched L=0", GemmArguments{empty(DType::fp32, {0, 8, 16}), empty(DType::fp32, {0, 16, 8}),
                                    empty(DType::fp32, {0, 8, 8}), DType::fp32}},
      {"gemm K=0", GemmArguments{empty(DType::fp32, {16, 0}), empty(DType::fp32, {0, 8}),
                                 real(DType::fp32, {16, 8}, out_k0.data()), DType::fp32}},
  };
  for (const auto& [what, args] : cases) {
    SCOPED_TRACE(what);
    const std::vector<OperatorPtr> ops = get_operators(args, Target::cpu());
    ASSERT_FALSE(ops.empty()) << validate(args).to_string();
    const Status s = ops[0]->run(args);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
  }
  // Rows past offsets[G-1] with zero_tail and a sum over no K are zeros.
  for (float v : out) EXPECT_EQ(v, 0.0f);
  for (float v : out_k0) EXPECT_EQ(v, 0.0f);
}

TEST(CpuProvider, n_grouped_zero_tail_zeroes_the_columns_past_the_last_group_and_leaves_them_otherwise) {
  std::mt19937 rng(13);
  ProblemSpec s;
  s.kind = OperationKind::grouped_n, s.m = 9, s.n = 40, s.trailing = 7, s.out_layout = OutLayout::padded;
  const cpu::CpuOperator op(s.kind);
  for (bool zero_tail : {false, true}) {
    s.zero_tail = zero_tail;
    HostProblem p = make_problem(s, rng);
    ASSERT_TRUE(op.run(p.arguments()).is_ok());
    for (int64_t r = 0; r < s.m; ++r)
      for (int64_t c = s.n - s.trailing; c < s.n; ++c) {
        const int64_t e = r * s.n + c;
        if (zero_tail) EXPECT_EQ(p.out.get(e), 0.0) << r << "," << c;
        else EXPECT_TRUE(std::isnan(p.out.get(e))) << r << "," << c;
      }
    // The rest against the float64 loop, and the padding between rows untouched.
    const Comparison c = compare(p.out, reference_result(p.arguments()), default_tolerance(s.out, s.k));
    EXPECT_TRUE(c.ok()) << s.describe() << ": " << c.describe();
  }
}

TEST(CpuProvider, n_grouped_columns_of_empty_groups_stay_untouched_and_g_zero_writes_only_the_tail) {
  std::mt19937 rng(17);
  ProblemSpec s;
  s.kind = OperationKind::grouped_n, s.m = 5, s.n = 12, s.k = 8, s.groups = 3, s.special_groups = false;
  const cpu::CpuOperator op(s.kind);
  HostProblem p = make_problem(s, rng);
  const int32_t ends[3] = {4, 4, 9};  // group 1 is empty; columns 9..11 are past the last group
  for (int64_t g = 0; g < 3; ++g) p.offsets.set(g, ends[g]);
  ASSERT_TRUE(op.run(p.arguments()).is_ok());
  Comparison c = compare(p.out, reference_result(p.arguments()), default_tolerance(s.out, s.k));
  EXPECT_TRUE(c.ok()) << c.describe();

  s.groups = 0, s.zero_tail = true;  // no groups: with zero_tail every column is tail
  HostProblem none = make_problem(s, rng);
  ASSERT_TRUE(op.run(none.arguments()).is_ok());
  for (int64_t e = 0; e < s.m * s.n; ++e) EXPECT_EQ(none.out.get(e), 0.0) << e;
}

TEST(CpuMicrokernel, the_portable_and_the_dispatched_kernels_agree) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> d(-1, 1);
  const int64_t kc = 37, ldc = 20;
  std::vector<float> a(kc * cpu::kMr), b(kc * cpu::kNr), c0(cpu::kMr * ldc), c1;
  for (float& x : a) x = d(rng);
  for (float& x : b) x = d(rng);
  for (float& x : c0) x = d(rng);
  c1 = c0;
  std::vector<float> start = c0;
  cpu::portable_microkernel()(kc, a.data(), b.data(), c0.data(), ldc);
  cpu::best_microkernel()(kc, a.data(), b.data(), c1.data(), ldc);
  for (int i = 0; i < cpu::kMr; ++i)
    for (int j = 0; j < ldc; ++j) {
      double want = start[i * ldc + j];
      if (j < cpu::kNr)
        for (int64_t k = 0; k < kc; ++k) want += double(a[k * cpu::kMr + i]) * b[k * cpu::kNr + j];
      EXPECT_NEAR(c0[i * ldc + j], want, 1e-5) << i << "," << j;
      EXPECT_NEAR(c1[i * ldc + j], want, 1e-5) << i << "," << j;
    }
}

}  // namespace
}  // namespace gemmops::testing
