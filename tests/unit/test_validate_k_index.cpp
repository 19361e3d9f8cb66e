// tests/unit/test_validate_k_index.cpp: the K-grouped form's operands gathered along K
// (GroupedGemmArguments::a_k_index, b_k_index): validate()'s rules with their messages, the CPU
// operator and a plan against the reference, and which operators serve them (the sm90 kernels
// only with the trial opt-in)
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "gemmops/gemmops.hpp"
#include "support/compare.hpp"
#include "support/invalid.hpp"
#include "support/problems.hpp"
#include "support/random_problems.hpp"
#include "support/reference.hpp"
#include "support/scoped_env.hpp"
#include "support/sm90_operators.hpp"

namespace gemmops {
namespace {

using testing::invalid;

// A (M, TotalK) x B (TotalK, N) -> out (G, M, N) with host offsets and a K index of data; the
// gathered operands' sources have `rows` k-rows (A: columns).
struct GatheredK {
  std::vector<int32_t> offsets, index;
  GroupedGemmArguments args;
  GatheredK(bool gather_a, bool gather_b, int64_t rows, std::vector<int32_t> ends, std::vector<int32_t> idx,
            int64_t m = 16, int64_t n = 16)
      : offsets(std::move(ends)), index(std::move(idx)) {
    const auto G = static_cast<int64_t>(offsets.size()), total_k = static_cast<int64_t>(index.size());
    args = testing::make_grouped_k(G, m, n, total_k);
    if (gather_a) {
      args.A = TensorDesc::contiguous(DType::bf16, {m, rows});
      args.a_k_index = TensorDesc::contiguous(DType::i32, {total_k}, Device::cpu(), index.data());
    }
    if (gather_b) {
      args.B = TensorDesc::contiguous(DType::bf16, {rows, n});
      args.b_k_index = TensorDesc::contiguous(DType::i32, {total_k}, Device::cpu(), index.data());
    }
    args.offsets = TensorDesc::contiguous(DType::i32, {G}, Device::cpu(), offsets.data());
  }
};

TEST(ValidateKIndex, a_gathered_operand_may_have_any_number_of_k_rows_and_total_k_is_the_indexs) {
  for (auto [a, b] : {std::pair{true, false}, std::pair{false, true}, std::pair{true, true}}) {
    GatheredK g(a, b, 3, {2, 5}, {0, 2, 1, 1, 0, 7});  // the last k lies past offsets[G-1]: never read
    ASSERT_TRUE(validate(g.args)) << validate(g.args).to_string();
    const auto shape = problem_shape(g.args);
    ASSERT_TRUE(shape);
    EXPECT_EQ(shape->k, 6);
  }
}

TEST(ValidateKIndex, must_be_int32_of_shape_total_k) {
  GatheredK g(false, true, 3, {2, 5}, {0, 2, 1, 1, 0, 0});
  g.args.b_k_index->dtype = DType::fp32;
  EXPECT_EQ(invalid(g.args),
            "b_k_index: must be int32 with shape (TotalK,) = (6,), the other operand's K; got fp32 with shape (6,)");
  g.args.b_k_index = TensorDesc::contiguous(DType::i32, {5}, Device::cpu(), g.index.data());
  EXPECT_EQ(invalid(g.args),
            "b_k_index: must be int32 with shape (TotalK,) = (6,), the other operand's K; got int32 with shape (5,)");
  GatheredK both(true, true, 3, {2, 5}, {0, 2, 1, 1, 0, 0});
  both.args.b_k_index = TensorDesc::contiguous(DType::i32, {5}, Device::cpu(), both.index.data());
  EXPECT_EQ(invalid(both.args),
            "b_k_index: must be int32 with shape (TotalK,) = (6,), the other operand's K; got int32 with shape (5,)");
}

TEST(ValidateKIndex, must_be_contiguous_and_on_its_operands_device) {
  GatheredK g(true, false, 3, {2, 5}, {0, 2, 1, 1, 0, 0});
  g.args.a_k_index->strides = {2};
  EXPECT_NE(invalid(g.args).find("a_k_index: must be contiguous (stride 1)"), std::string::npos) << invalid(g.args);
  g.args.a_k_index = TensorDesc::contiguous(DType::i32, {6}, Device::cuda(0));
  EXPECT_EQ(invalid(g.args), "a_k_index: must be on A's device (cpu); got cuda:0");
}

TEST(ValidateKIndex, host_values_a_group_reads_must_be_rows_of_the_source) {
  GatheredK g(true, false, 3, {2, 5}, {0, 2, 1, 3, 0, 0});
  EXPECT_EQ(invalid(g.args), "a_k_index: values must be columns of A, in [0, 3); got a_k_index[3] = 3");
  GatheredK h(false, true, 3, {2, 5}, {0, 2, 1, -1, 0, 0});
  EXPECT_EQ(invalid(h.args), "b_k_index: values must be rows of B, in [0, 3); got b_k_index[3] = -1");
  h.index[3] = 2;
  h.index[5] = -1;  // past offsets[G-1]: not read, not checked
  EXPECT_TRUE(validate(h.args));
}

TEST(ValidateKIndex, only_the_k_grouped_form_gathers_along_k) {
  auto m = testing::make_grouped_m(2, 16, 16, 32);
  m.b_k_index = TensorDesc::contiguous(DType::i32, {32});
  EXPECT_EQ(invalid(m), "b_k_index: only the K-grouped form (2/2/3) gathers along K; got it for grouped_gemm_m");
}

// The CPU operator (or a plan on it) against the reference, with repeats, a k-row never read, an
// empty group and k past the last offset (their index -1).
void run_on_cpu(bool gather_a, bool gather_b, bool through_plan) {
  const int64_t rows = 5, m = 24, n = 40;
  GatheredK g(gather_a, gather_b, rows, {3, 3, 7}, {4, 4, 0, 2, 1, 4, 3, -1}, m, n);
  std::mt19937 rng(9);
  testing::HostTensor a = testing::HostTensor::strided(DType::bf16, {m, gather_a ? rows : 8}, {1, m});  // M-major
  testing::HostTensor b = testing::HostTensor::contiguous(DType::bf16, {gather_b ? rows : 8, n});
  testing::HostTensor out = testing::HostTensor::contiguous(DType::fp32, {3, m, n});
  testing::fill_random(a, rng);
  testing::fill_random(b, rng);
  out.poison();
  g.args.A = a.desc;
  g.args.B = b.desc;
  g.args.out = out.desc;
  if (through_plan) {
    Result<Plan> plan = make_plan(g.args, Target::cpu());
    ASSERT_TRUE(plan) << plan.status().to_string();
    OperandData d{a.desc.data, b.desc.data, out.desc.data, g.offsets.data()};
    d.a_k_index = gather_a ? g.index.data() : nullptr;
    d.b_k_index = gather_b ? g.index.data() : nullptr;
    ASSERT_TRUE(plan->run(d));
    d.a_k_index = d.b_k_index = nullptr;  // the layout gathers: a call without the index is refused
    const Status s = plan->run(d);
    EXPECT_EQ(s.code(), ErrorCode::invalid_argument);
    EXPECT_NE(s.message().find("_k_index: run needs data"), std::string::npos) << s.message();
  } else {
    const auto ops = get_operators(g.args, Target::cpu());
    ASSERT_FALSE(ops.empty());
    const Status s = ops[0]->run(g.args);
    ASSERT_TRUE(s) << s.to_string();
  }
  const testing::Comparison c =
      testing::compare(out, testing::reference_result(g.args), testing::default_tolerance(DType::fp32, 8));
  EXPECT_TRUE(c.ok()) << c.describe();
}

TEST(ValidateKIndex, the_cpu_operator_serves_a_b_and_both_and_matches_the_reference) {
  run_on_cpu(true, false, false);
  run_on_cpu(false, true, false);
  run_on_cpu(true, true, false);
}

TEST(ValidateKIndex, a_plan_runs_with_each_calls_index_and_refuses_a_call_without_one) {
  run_on_cpu(true, false, true);
  run_on_cpu(false, true, true);
}

TEST(KIndexSupport, operators_that_do_not_gather_refuse_it_and_sm90_serves_it) {
  const Device cuda = Device::cuda(0);
  auto g = testing::make_grouped_k(4, 256, 256, 512, DType::bf16, cuda);
  g.A = TensorDesc(DType::bf16, {256, 512}, {1, 256}, cuda);  // M-major A
  g.B = TensorDesc::contiguous(DType::bf16, {300, 256}, cuda);
  g.out = TensorDesc::contiguous(DType::bf16, {4, 256, 256}, cuda);
  g.b_k_index = TensorDesc::contiguous(DType::i32, {512}, cuda);
  for (const Rejection& r : get_rejections(g, Target::sm(90, true))) {
    const std::string& why = r.reason.message();
    if (r.op->metadata().provider != "sm90" && why.find("target:") != 0) {
      EXPECT_NE(why.find("b_k_index"), std::string::npos) << r.op->name() << ": " << why;
    }
  }
  // Offered since it passed the GPU suite and memcheck (H100, 2026-12-06): an sm90 operator first.
  const std::vector<OperatorPtr> found = get_operators(g, Target::sm(90, true));
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(found.front()->metadata().provider, "sm90") << found.front()->name();

  int served = 0;
  for (const OperatorPtr& op : testing::sm90_operators()) {
    const OperandConstraints& c = op->metadata().constraints;
    if (c.a_dtypes[0] != DType::bf16 || c.out_dtypes[0] != DType::bf16) continue;
    const Status s = op->supports(g, Target::sm(90, true));
    if (s) {
      ++served;
    } else if (s.message().find("b_k_index: sm90 kernels gather B without a cluster") == std::string::npos &&
               s.message().find("operation:") != 0) {  // (wide-accumulator designs serve no K-grouped form)
      ADD_FAILURE() << op->name() << ": " << s.message();
    }
  }
  EXPECT_GT(served, 0);
}

TEST(KIndexSupport, sm90_refuses_a_k_major_source_and_an_n_that_ends_inside_a_16_byte_chunk) {
  testing::ScopedEnv trial{{"GEMMOPS_TRIAL_DESIGNS", "1"}};
  const Device cuda = Device::cuda(0);
  auto g = testing::make_grouped_k(2, 64, 36, 128, DType::bf16, cuda);
  g.A = TensorDesc(DType::bf16, {64, 128}, {1, 64}, cuda);
  g.B = TensorDesc(DType::bf16, {10, 36}, {40, 1}, cuda);
  g.out = TensorDesc(DType::bf16, {2, 64, 36}, {64 * 40, 40, 1}, cuda);  // padded rows: out's own rule holds
  g.b_k_index = TensorDesc::contiguous(DType::i32, {128}, cuda);
  int refused_n = 0;
  for (const OperatorPtr& op : testing::sm90_operators()) {
    const Status s = op->supports(g, Target::sm(90, true));
    EXPECT_FALSE(s) << op->name();
    if (s.message().find("b_k_index: sm90 kernels copy a gathered B's source rows in whole 16-byte chunks") == 0)
      ++refused_n;
  }
  EXPECT_GT(refused_n, 0);
  g = testing::make_grouped_k(2, 64, 64, 128, DType::bf16, cuda);
  g.A = TensorDesc::contiguous(DType::bf16, {64, 304}, cuda);  // K-major: each k's M values strided
  g.out = TensorDesc::contiguous(DType::bf16, {2, 64, 64}, cuda);
  g.a_k_index = TensorDesc::contiguous(DType::i32, {128}, cuda);
  int refused_major = 0;
  for (const OperatorPtr& op : testing::sm90_operators()) {
    const Status s = op->supports(g, Target::sm(90, true));
    if (s.message().find("a_k_index: sm90 kernels gather an M-major A only") == 0) ++refused_major;
  }
  EXPECT_GT(refused_major, 0);
}

}  // namespace
}  // namespace gemmops
