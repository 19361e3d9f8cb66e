// tests/compile/test_simt_compile.cpp: every portable (simt) operator compiles with NVRTC, every form
// (the masked one and the aligned M-grouped walk included) in one cubin, for every architecture from
// sm_80 on, on a machine without a GPU, with no spill
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "gemmops/gemmops.hpp"
#include "simt/arch_modules.hpp"
#include "simt/grouped_gemm.hpp"
#include "support/scoped_env.hpp"

namespace gemmops {
namespace {

std::vector<OperatorPtr> simt_operators() {
  std::vector<OperatorPtr> ops;
  for (const OperatorPtr& op : default_registry().all())
    if (op->metadata().provider == "simt") ops.push_back(op);
  return ops;
}

/// A fake N-grouped problem (the form only this provider serves) in the operator's dtypes.
GroupedGemmArguments fake_grouped_n(const OperatorMetadata& m) {
  const Device cuda = Device::cuda(0);
  const DType ab = m.constraints.a_dtypes.at(0), out = m.constraints.out_dtypes.at(0);
  return GroupedGemmArguments{TensorDesc::contiguous(ab, {4, 96, 64}, cuda), TensorDesc::contiguous(ab, {64, 256}, cuda),
                              TensorDesc::contiguous(out, {96, 256}, cuda), DType::fp32,
                              TensorDesc::contiguous(DType::i32, {4}, cuda)};
}

/// A fake masked problem (A (G, MaxM, K), the offsets its row counts) in the operator's dtypes.
GroupedGemmArguments fake_masked(const OperatorMetadata& m) {
  const Device cuda = Device::cuda(0);
  const DType ab = m.constraints.a_dtypes.at(0), out = m.constraints.out_dtypes.at(0);
  return GroupedGemmArguments{TensorDesc::contiguous(ab, {8, 16, 64}, cuda), TensorDesc::contiguous(ab, {8, 64, 256}, cuda),
                              TensorDesc::contiguous(out, {8, 16, 256}, cuda), DType::fp32,
                              TensorDesc::contiguous(DType::i32, {8}, cuda)};
}

/// A fake M-grouped problem whose groups start at multiples of 128, with the zero tail.
GroupedGemmArguments fake_aligned(const OperatorMetadata& m) {
  const Device cuda = Device::cuda(0);
  const DType ab = m.constraints.a_dtypes.at(0), out = m.constraints.out_dtypes.at(0);
  GroupedGemmArguments g{TensorDesc::contiguous(ab, {1024, 64}, cuda), TensorDesc::contiguous(ab, {4, 64, 256}, cuda),
                         TensorDesc::contiguous(out, {1024, 256}, cuda), DType::fp32,
                         TensorDesc::contiguous(DType::i32, {4}, cuda), true};
  g.group_alignment = 128;
  return g;
}

void expect_clean(const jit::CompiledKernel& k, const std::string& what) {
  EXPECT_EQ(k.lowered_names.size(), 5u) << what;  // dense, M-, K-, N-grouped and masked
  EXPECT_EQ(k.log.find("spill"), std::string::npos) << what << ": " << k.log;
}

class SimtCompileTest : public ::testing::TestWithParam<OperatorPtr> {};

TEST_P(SimtCompileTest, compiles_every_form_from_fake_tensors) {
  const OperatorPtr& op = GetParam();
  const Arguments args = fake_grouped_n(op->metadata());
  ASSERT_TRUE(op->supports(args)) << op->supports(args).to_string();
  auto artifact = op->compile(args);
  ASSERT_TRUE(artifact) << artifact.status().to_string();
  EXPECT_EQ(artifact->operator_name(), op->name());
  EXPECT_NE(artifact->description().find("simt_gemm_kernel"), std::string::npos) << artifact->description();
  EXPECT_EQ(artifact->description().find("spill"), std::string::npos) << artifact->description();
}

TEST_P(SimtCompileTest, compiles_the_masked_form_and_aligned_groups_from_fake_tensors) {
  const OperatorPtr& op = GetParam();
  // Served only on request until they pass the GPU suite; compiled here all the same.
  testing::ScopedEnv trial{{"GEMMOPS_TRIAL_DESIGNS", "1"}};
  for (const Arguments& args : {Arguments(fake_masked(op->metadata())), Arguments(fake_aligned(op->metadata()))}) {
    ASSERT_TRUE(op->supports(args)) << op->supports(args).to_string();
    auto artifact = op->compile(args);
    ASSERT_TRUE(artifact) << artifact.status().to_string();
    EXPECT_EQ(artifact->description().find("spill"), std::string::npos) << artifact->description();
    const Status s = op->run(args, *artifact);  // fake tensors: refused before any launch
    EXPECT_EQ(s.code(), ErrorCode::invalid_argument) << s.to_string();
  }
}

TEST_P(SimtCompileTest, run_refuses_fake_tensors) {
  const Status s = GetParam()->run(fake_grouped_n(GetParam()->metadata()), Artifact{});
  EXPECT_EQ(s.code(), ErrorCode::invalid_argument) << s.to_string();
  EXPECT_NE(s.message().find("fake"), std::string::npos) << s.message();
}

std::string operator_name(const ::testing::TestParamInfo<OperatorPtr>& info) { return info.param->name(); }

INSTANTIATE_TEST_SUITE_P(Simt, SimtCompileTest, ::testing::ValuesIn(simt_operators()), operator_name);

TEST(SimtArchitectures, one_request_compiles_for_every_architecture_from_sm80_on) {
  // Machine code of one compute capability runs on no other major version, so run() compiles for
  // each device's own: Ampere, Ada, Hopper, Blackwell.
  const simt::ArchModules modules(simt::compile_request("simt_arch_test", DType::bf16, DType::fp32));
  for (int cc : {80, 86, 89, 90, 100, 120}) {
    SCOPED_TRACE("sm_" + std::to_string(cc));
    auto arch = modules.for_cc(cc);
    ASSERT_TRUE(arch) << arch.status().to_string();
    expect_clean(*(*arch)->compiled, "sm_" + std::to_string(cc));
    EXPECT_NE((*arch)->compiled->key_text.find("--gpu-architecture=sm_" + std::to_string(cc)), std::string::npos)
        << (*arch)->compiled->key_text;
    auto again = modules.for_cc(cc);  // kept: the same module, not a second compile
    ASSERT_TRUE(again);
    EXPECT_EQ(again->get(), arch->get());
  }
}

TEST(SimtArchitectures, every_dtype_pair_compiles_for_sm90_without_a_spill) {
  for (DType ab : {DType::bf16, DType::fp16, DType::fp32})
    for (DType out : {DType::bf16, DType::fp16, DType::fp32}) {
      const std::string what = std::string(name(ab)) + " -> " + std::string(name(out));
      auto arch = simt::ArchModules(simt::compile_request("simt_dtype_test", ab, out)).for_cc(90);
      ASSERT_TRUE(arch) << what << ": " << arch.status().to_string();
      expect_clean(*(*arch)->compiled, what);
    }
}

TEST(SimtArchitectures, compile_without_a_device_builds_for_the_target_gemmops_target_names) {
  if (device_count() && *device_count() > 0) GTEST_SKIP() << "a CUDA device is present; its architecture wins";
  struct Env {
    Env() { ::setenv("GEMMOPS_TARGET", "90a", 1); }
    ~Env() { ::unsetenv("GEMMOPS_TARGET"); }
  } env;
  const OperatorPtr op = simt_operators().at(0);
  auto artifact = op->compile(fake_grouped_n(op->metadata()));
  ASSERT_TRUE(artifact) << artifact.status().to_string();
  EXPECT_NE(artifact->description().find("for sm_90 "), std::string::npos) << artifact->description();
}

}  // namespace
}  // namespace gemmops
