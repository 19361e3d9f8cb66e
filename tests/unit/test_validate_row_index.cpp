// tests/unit/test_validate_row_index.cpp: the gathered A's row index (GroupedGemmArguments::a_row_index):
// validate()'s rules with their messages, the CPU operator against the reference, and which
// operators serve it (the sm90 kernels only with the trial opt-in)
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

// A (rows, K) gathered into TotalM product rows, G groups; host offsets and index with data.
struct Gathered {
  std::vector<int32_t> offsets, index;
  GroupedGemmArguments args;
  Gathered(int64_t rows, std::vector<int32_t> ends, std::vector<int32_t> idx, int64_t n = 16, int64_t k = 16)
      : offsets(std::move(ends)), index(std::move(idx)) {
    const auto G = static_cast<int64_t>(offsets.size()), total_m = static_cast<int64_t>(index.size());
    args = testing::make_grouped_m(G, total_m, n, k);
    args.A = TensorDesc::contiguous(DType::bf16, {rows, k});
    args.offsets = TensorDesc::contiguous(DType::i32, {G}, Device::cpu(), offsets.data());
    args.a_row_index = TensorDesc::contiguous(DType::i32, {total_m}, Device::cpu(), index.data());
  }
};

TEST(ValidateRowIndex, a_gathered_a_may_have_any_number_of_rows_and_total_m_is_outs) {
  Gathered g(3, {2, 5}, {0, 2, 1, 1, 0, 7});  // the last row lies past offsets[G-1]: never read
  ASSERT_TRUE(validate(g.args)) << validate(g.args).to_string();
  const auto shape = problem_shape(g.args);
  ASSERT_TRUE(shape);
  EXPECT_EQ(shape->m, 6);
}

TEST(ValidateRowIndex, must_be_int32_of_shape_total_m) {
  Gathered g(3, {2, 5}, {0, 2, 1, 1, 0, 0});
  g.args.a_row_index->dtype = DType::fp32;
  EXPECT_EQ(invalid(g.args), "a_row_index: must be int32 with shape (TotalM,) = (6,), out's rows; got fp32 with shape (6,)");
  g.args.a_row_index = TensorDesc::contiguous(DType::i32, {5}, Device::cpu(), g.index.data());
  EXPECT_EQ(invalid(g.args), "a_row_index: must be int32 with shape (TotalM,) = (6,), out's rows; got int32 with shape (5,)");
}

TEST(ValidateRowIndex, must_be_contiguous_and_on_as_device) {
  Gathered g(3, {2, 5}, {0, 2, 1, 1, 0, 0});
  g.args.a_row_index->strides = {2};
  EXPECT_NE(invalid(g.args).find("a_row_index: must be contiguous (stride 1)"), std::string::npos) << invalid(g.args);
  g.args.a_row_index = TensorDesc::contiguous(DType::i32, {6}, Device::cuda(0));
  EXPECT_EQ(invalid(g.args), "a_row_index: must be on A's device (cpu); got cuda:0");
}

TEST(ValidateRowIndex, host_values_a_group_reads_must_be_rows_of_a) {
  Gathered g(3, {2, 5}, {0, 2, 1, 3, 0, 0});
  EXPECT_EQ(invalid(g.args), "a_row_index: values must be rows of A, in [0, 3); got a_row_index[3] = 3");
  g.index[3] = -1;
  EXPECT_EQ(invalid(g.args), "a_row_index: values must be rows of A, in [0, 3); got a_row_index[3] = -1");
  g.index[3] = 2;
  g.index[5] = -1;  // past offsets[G-1]: not read, not checked
  EXPECT_TRUE(validate(g.args));
}

TEST(ValidateRowIndex, only_the_m_grouped_form_gathers) {
  auto k = testing::make_grouped_k(2, 16, 16, 32);
  k.a_row_index = TensorDesc::contiguous(DType::i32, {16});
  EXPECT_EQ(invalid(k), "a_row_index: only the M-grouped form (2/3/2) gathers A's rows; got it for grouped_gemm_k");
}

TEST(ValidateRowIndex, the_cpu_operator_serves_it_and_matches_the_reference) {
  // Repeats, a row never read, an empty group, rows past the last offset (their index -1).
  const int64_t rows = 5, n = 24, k = 40;
  Gathered g(rows, {3, 3, 7}, {4, 4, 0, 2, 1, 4, 3, -1}, n, k);
  std::mt19937 rng(7);
  testing::HostTensor a = testing::HostTensor::contiguous(DType::bf16, {rows, k});
  testing::HostTensor b = testing::HostTensor::contiguous(DType::bf16, {3, k, n});
  testing::HostTensor out = testing::HostTensor::contiguous(DType::fp32, {8, n});
  testing::fill_random(a, rng);
  testing::fill_random(b, rng);
  out.poison();
  g.args.A = a.desc;
  g.args.B = b.desc;
  g.args.out = out.desc;
  const auto ops = get_operators(g.args, Target::cpu());
  ASSERT_FALSE(ops.empty());
  const Status s = ops[0]->run(g.args);
  ASSERT_TRUE(s) << s.to_string();
  const testing::Comparison c = testing::compare(out, testing::reference_result(g.args), testing::default_tolerance(DType::fp32, k));
  EXPECT_TRUE(c.ok()) << c.describe();
}

TEST(ValidateRowIndex, a_plan_runs_with_each_calls_index_and_refuses_a_call_without_one) {
  const int64_t rows = 5, n = 16, k = 16;
  Gathered g(rows, {3, 6}, {4, 4, 0, 2, 1, 3}, n, k);
  std::mt19937 rng(8);
  testing::HostTensor a = testing::HostTensor::contiguous(DType::bf16, {rows, k});
  testing::HostTensor b = testing::HostTensor::contiguous(DType::bf16, {2, k, n});
  testing::HostTensor out = testing::HostTensor::contiguous(DType::fp32, {6, n});
  testing::fill_random(a, rng);
  testing::fill_random(b, rng);
  g.args.A = a.desc;
  g.args.B = b.desc;
  g.args.out = out.desc;
  Result<Plan> plan = make_plan(g.args, Target::cpu());
  ASSERT_TRUE(plan) << plan.status().to_string();
  std::vector<int32_t> other = {1, 1, 1, 0, 0, 0};  // a later call's index, same layout
  OperandData d{a.desc.data, b.desc.data, out.desc.data, g.offsets.data(), nullptr, nullptr, other.data()};
  out.poison();
  ASSERT_TRUE(plan->run(d));
  g.args.a_row_index->data = other.data();
  const testing::Comparison c = testing::compare(out, testing::reference_result(g.args), testing::default_tolerance(DType::fp32, k));
  EXPECT_TRUE(c.ok()) << c.describe();
  d.a_row_index = nullptr;  // the layout gathers: a call without the index is refused, not run ungathered
  const Status s = plan->run(d);
  EXPECT_EQ(s.code(), ErrorCode::invalid_argument);
  EXPECT_EQ(s.message(), "a_row_index: run needs data; got a fake tensor (no data pointer)");
}

TEST(RowIndexSupport, sm90_refuses_a_k_that_ends_inside_a_16_byte_chunk) {
  // A K of 36 bf16 (72 bytes) would end in half a chunk: refused by every design with the rule.
  testing::ScopedEnv trial{{"GEMMOPS_TRIAL_DESIGNS", "1"}};
  auto g = testing::make_grouped_m(2, 64, 64, 36, DType::bf16, Device::cuda(0));
  g.A = TensorDesc(DType::bf16, {10, 36}, {40, 1}, Device::cuda(0));
  g.B = TensorDesc::contiguous(DType::bf16, {2, 36, 64}, Device::cuda(0));  // N-major: 16-byte strides
  g.a_row_index = TensorDesc::contiguous(DType::i32, {64}, Device::cuda(0));
  int refused = 0;
  for (const OperatorPtr& op : testing::sm90_operators()) {
    const Status s = op->supports(g, Target::sm(90, true));
    EXPECT_FALSE(s) << op->name();
    if (s.message().find("a_row_index: sm90 kernels copy a gathered A's rows in whole 16-byte chunks: K must be a "
                         "multiple of 8 elements; got K 36") != std::string::npos)
      ++refused;
  }
  EXPECT_GT(refused, 0);
}

TEST(RowIndexSupport, operators_that_do_not_gather_refuse_it_and_sm90_serves_it) {
  auto g = testing::make_grouped_m(4, 512, 256, 128, DType::bf16, Device::cuda(0));
  g.A = TensorDesc::contiguous(DType::bf16, {300, 128}, Device::cuda(0));
  g.a_row_index = TensorDesc::contiguous(DType::i32, {512}, Device::cuda(0));
  for (const Rejection& r : get_rejections(g, Target::sm(90, true))) {
    const std::string& why = r.reason.message();
    if (r.op->metadata().provider != "sm90" && why.find("target:") != 0) {  // (other targets say so first)
      EXPECT_NE(why.find("a_row_index"), std::string::npos) << r.op->name() << ": " << why;
    }
  }
  // Offered since it passed the GPU suite and memcheck (H100, 2026-12-06): an sm90 operator first.
  const std::vector<OperatorPtr> found = get_operators(g, Target::sm(90, true));
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(found.front()->metadata().provider, "sm90") << found.front()->name();

  int served = 0, refused_wide = 0, refused_along_n = 0;
  for (const OperatorPtr& op : testing::sm90_operators()) {
    const OperandConstraints& c = op->metadata().constraints;
    if (c.a_dtypes[0] != DType::bf16 || c.out_dtypes[0] != DType::bf16) continue;
    const Status s = op->supports(g, Target::sm(90, true));
    if (s) {
      ++served;
    } else if (s.message().find("to gather A's rows") != std::string::npos) {
      ++refused_wide;
    } else if (op->metadata().design.cluster_n > 1 &&
               s.message().find("a_row_index: sm90 kernels gather A's rows without a cluster along N only") !=
                   std::string::npos) {
      ++refused_along_n;  // it shares A by TMA multicast, and says so
    } else {
      ADD_FAILURE() << op->name() << ": " << s.message();
    }
  }
  EXPECT_GT(served, 0);
  EXPECT_GT(refused_wide, 0) << "the 128x192 ping-pong design refuses, naming its registers";
  EXPECT_GT(refused_along_n, 0) << "a design with a cluster along N refuses, naming the rule";
}

}  // namespace
}  // namespace gemmops
