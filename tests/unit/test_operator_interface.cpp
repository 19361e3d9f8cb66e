// tests/unit/test_operator_interface.cpp: the checks Operator's public methods make before any hook
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "gemmops/operator.hpp"
#include "support/fake_operator.hpp"
#include "support/problems.hpp"

namespace gemmops {
namespace {

using testing::FakeOperator;
using testing::make_gemm;
using testing::make_grouped_m;

// Real host buffers for A, B and out so that run() sees no fake tensor.
struct HostGemm {
  std::vector<uint16_t> a, b, out;
  GemmArguments args;
  HostGemm(int64_t m, int64_t n, int64_t k) : a(m * k), b(k * n), out(m * n), args(make_gemm(m, n, k)) {
    args.A.data = a.data();
    args.B.data = b.data();
    args.out.data = out.data();
  }
};

FakeOperator::Options cpu_options(const char* name = "fake_cpu") {
  FakeOperator::Options o;
  o.name = name;
  return o;
}

TEST(OperatorSupports, validation_comes_first) {
  auto op = FakeOperator::make(cpu_options());
  auto g = make_gemm(8, 8, 8);
  g.accumulator = DType::fp16;
  Status s = op->supports(g);
  EXPECT_EQ(s.code(), ErrorCode::invalid_argument);
  EXPECT_EQ(s.message(), "accumulator: must be fp32; got fp16");
  EXPECT_EQ(op->extra_calls, 0);
}

TEST(OperatorSupports, target_comes_before_constraints) {
  FakeOperator::Options o = cpu_options("sm90a_fake");
  o.target = Target::sm(90, true);
  o.constraints.a_dtypes = {DType::fp16};  // would also fail, but later
  auto op = FakeOperator::make(o);
  Status s = op->supports(make_gemm(8, 8, 8, DType::bf16, DType::bf16, Device::cuda(0)), Target::sm(80));
  EXPECT_EQ(s.code(), ErrorCode::unsupported);
  EXPECT_EQ(s.message(), "target: sm90a_fake is built for 90a, which does not run on 80");
}

TEST(OperatorSupports, cuda_operators_need_cuda_tensors) {
  FakeOperator::Options o = cpu_options("sm90a_fake");
  o.target = Target::sm(90, true);
  auto op = FakeOperator::make(o);
  EXPECT_EQ(op->supports(make_gemm(8, 8, 8)).message(), "A: must be on a cuda device; got cpu");
  EXPECT_TRUE(op->supports(make_gemm(8, 8, 8, DType::bf16, DType::bf16, Device::cuda(0))));
}

TEST(OperatorSupports, cpu_operators_need_cpu_tensors) {
  auto op = FakeOperator::make(cpu_options());
  EXPECT_EQ(op->supports(make_gemm(8, 8, 8, DType::bf16, DType::bf16, Device::cuda(0)), Target::cpu()).message(),
            "A: must be on a cpu device; got cuda:0");
}

TEST(OperatorSupports, constraints_come_before_supports_extra) {
  FakeOperator::Options o = cpu_options();
  o.constraints.kinds = {OperationKind::grouped_m};
  o.extra = unsupported("extra: never reached");
  auto op = FakeOperator::make(o);
  EXPECT_EQ(op->supports(make_gemm(8, 8, 8)).message(), "operation: must be one of grouped_gemm_m; got gemm");
  EXPECT_EQ(op->extra_calls, 0);
  EXPECT_EQ(op->supports(make_grouped_m(2, 8, 8, 8)).message(), "extra: never reached");
  EXPECT_EQ(op->extra_calls, 1);
}

TEST(OperatorCompile, refuses_unsupported_arguments_without_compiling) {
  FakeOperator::Options o = cpu_options();
  o.constraints.a_dtypes = {DType::fp32};
  auto op = FakeOperator::make(o);
  auto r = op->compile(make_gemm(8, 8, 8));
  EXPECT_EQ(r.status().message(), "A: dtype must be one of fp32; got bf16");
  EXPECT_EQ(op->compile_calls, 0);
}

TEST(OperatorCompile, accepts_fake_tensors) {
  auto op = FakeOperator::make(cpu_options());
  auto r = op->compile(make_gemm(8, 8, 8));
  ASSERT_TRUE(r) << r.status().to_string();
  EXPECT_EQ(r->operator_name(), "fake_cpu");
  EXPECT_EQ(op->compile_calls, 1);
}

TEST(OperatorCompile, an_artifact_named_after_another_operator_is_an_internal_error) {
  FakeOperator::Options o = cpu_options();
  o.artifact_name = "someone_else";
  auto r = FakeOperator::make(o)->compile(make_gemm(8, 8, 8));
  EXPECT_EQ(r.status().code(), ErrorCode::internal);
}

TEST(OperatorRun, refuses_fake_tensors) {
  auto op = FakeOperator::make(cpu_options());
  HostGemm h(8, 8, 8);
  h.args.B.data = nullptr;
  Status s = op->run(h.args);
  EXPECT_EQ(s.code(), ErrorCode::invalid_argument);
  EXPECT_EQ(s.message(), "B: run needs data; got a fake tensor (no data pointer)");
  EXPECT_EQ(op->run_calls, 0);
}

TEST(OperatorRun, refuses_fake_offsets) {
  auto op = FakeOperator::make(cpu_options());
  std::vector<uint16_t> a(64 * 8), b(2 * 8 * 8), out(64 * 8);
  auto g = make_grouped_m(2, 64, 8, 8);
  g.A.data = a.data();
  g.B.data = b.data();
  g.out.data = out.data();
  EXPECT_EQ(op->run(g).message(), "offsets: run needs data; got a fake tensor (no data pointer)");
}

TEST(OperatorRun, empty_tensors_need_no_data) {
  auto op = FakeOperator::make(cpu_options());
  auto g = make_gemm(0, 8, 8);  // A (0,8) and out (0,8) have no elements, so no memory either
  std::vector<uint16_t> b(64);
  g.B.data = b.data();
  EXPECT_TRUE(op->run(g));
}

TEST(OperatorRun, refuses_unsupported_arguments) {
  FakeOperator::Options o = cpu_options();
  o.extra = unsupported("extra: no");
  auto op = FakeOperator::make(o);
  HostGemm h(8, 8, 8);
  EXPECT_EQ(op->run(h.args).message(), "extra: no");
  EXPECT_EQ(op->run_calls, 0);
}

TEST(OperatorRun, refuses_an_artifact_of_another_operator) {
  auto op = FakeOperator::make(cpu_options("mine"));
  HostGemm h(8, 8, 8);
  Artifact theirs("theirs", nullptr, "");
  Status s = op->run(h.args, theirs);
  EXPECT_EQ(s.code(), ErrorCode::invalid_argument);
  EXPECT_EQ(s.message(), "artifact: must come from mine's compile(); got one from theirs");
  EXPECT_EQ(op->run_calls, 0);
}

TEST(OperatorRun, refuses_a_too_small_workspace) {
  FakeOperator::Options o = cpu_options();
  o.workspace = 4096;
  auto op = FakeOperator::make(o);
  HostGemm h(8, 8, 8);
  EXPECT_EQ(op->workspace_size(h.args), 4096u);
  std::vector<char> ws(4096);
  EXPECT_EQ(op->run(h.args, {}, nullptr, Workspace{ws.data(), 4095}).message(),
            "workspace: must hold at least 4096 bytes; got 4095");
  EXPECT_EQ(op->run(h.args, {}, nullptr, Workspace{nullptr, 4096}).message(),
            "workspace: must hold at least 4096 bytes; got 0");
  EXPECT_EQ(op->run_calls, 0);
  EXPECT_TRUE(op->run(h.args, {}, nullptr, Workspace{ws.data(), ws.size()}));
  EXPECT_EQ(op->run_calls, 1);
}

TEST(OperatorRun, an_empty_artifact_compiles_first) {
  auto op = FakeOperator::make(cpu_options());
  HostGemm h(8, 8, 8);
  EXPECT_TRUE(op->run(h.args));
  EXPECT_EQ(op->compile_calls, 1);
  EXPECT_EQ(op->run_calls, 1);
  auto artifact = op->compile(h.args);
  ASSERT_TRUE(artifact);
  EXPECT_TRUE(op->run(h.args, *artifact));
  EXPECT_EQ(op->compile_calls, 2);  // the given artifact was used, not a new compile
  EXPECT_EQ(op->run_calls, 2);
}

TEST(OperatorWorkspace, is_zero_for_unsupported_arguments) {
  FakeOperator::Options o = cpu_options();
  o.workspace = 128;
  o.extra = unsupported("extra: no");
  EXPECT_EQ(FakeOperator::make(o)->workspace_size(make_gemm(8, 8, 8)), 0u);
}

// An operator that leaves every optional hook to the base class.
class MinimalOperator : public Operator {
 public:
  MinimalOperator() : Operator(OperatorMetadata{"minimal", "test", {}, {}, Target::cpu()}) {}

 private:
  Result<Artifact> do_compile(const Arguments&) const override { return Artifact(name(), nullptr, ""); }
  Status do_run(const Arguments&, const Artifact&, Stream, Workspace) const override { return Status::ok(); }
};

TEST(OperatorDefaults, estimate_is_infinite_and_workspace_zero) {
  MinimalOperator op;
  EXPECT_TRUE(std::isinf(op.estimated_time_us(make_gemm(8, 8, 8), Target::cpu())));
  EXPECT_EQ(op.workspace_size(make_gemm(8, 8, 8)), 0u);
  EXPECT_TRUE(op.supports(make_gemm(8, 8, 8)));
  EXPECT_EQ(op.metadata().provider, "test");
}

}  // namespace
}  // namespace gemmops
