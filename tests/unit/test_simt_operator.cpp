// tests/unit/test_simt_operator.cpp: the portable operators' metadata, support, launch plan and
// estimates, which must rank them after every sm90 operator that serves the same arguments
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "gemmops/gemmops.hpp"
#include "simt/grouped_gemm.hpp"
#include "simt/launch_plan.hpp"
#include "simt/provider.hpp"
#include "support/problems.hpp"
#include "support/scoped_env.hpp"
#include "support/sm90_operators.hpp"

namespace gemmops {
namespace {

namespace ks = kernels::simt;

const Target kHopper = Target::sm(90, true);
const Device kCuda = Device::cuda(0);

std::vector<OperatorPtr> simt_operators() {
  std::vector<OperatorPtr> ops;
  for (const OperatorPtr& op : default_registry().all())
    if (op->metadata().provider == "simt") ops.push_back(op);
  return ops;
}

std::vector<OperatorPtr> by_provider(const std::vector<OperatorPtr>& ops, const std::string& provider) {
  std::vector<OperatorPtr> out;
  for (const OperatorPtr& op : ops)
    if (op->metadata().provider == provider) out.push_back(op);
  return out;
}

TEST(SimtOperator, one_operator_per_ab_and_out_dtype_for_every_kind) {
  Registry r;
  simt::register_simt_operators(r);
  const std::vector<OperatorPtr> all = r.all();
  ASSERT_EQ(all.size(), 9u);
  std::set<std::string> names;
  for (const OperatorPtr& op : all) {
    const OperatorMetadata& m = op->metadata();
    names.insert(m.name);
    EXPECT_EQ(m.provider, "simt");
    EXPECT_EQ(m.target.to_string(), "80");
    EXPECT_EQ(m.design.to_string(), "64x64x16_c1x1_simt");
    // Every form, the masked one included, and aligned M-grouped groups.
    EXPECT_EQ(m.constraints.kinds.size(), std::size(kAllOperationKinds)) << m.name;
    for (OperationKind kind : kAllOperationKinds)
      EXPECT_EQ(std::count(m.constraints.kinds.begin(), m.constraints.kinds.end(), kind), 1) << name(kind);
    EXPECT_TRUE(m.constraints.aligned_groups) << m.name;
    EXPECT_TRUE(m.constraints.a_majors.empty() && m.constraints.b_majors.empty() && !m.constraints.out_row_major);
  }
  EXPECT_EQ(names.size(), 9u);
  EXPECT_TRUE(names.count("sm80_grouped_gemm_bf16_f32acc_64x64x16_c1x1_simt"));
  EXPECT_TRUE(names.count("sm80_grouped_gemm_fp32_bf16_f32acc_64x64x16_c1x1_simt"));
  EXPECT_EQ(simt_operators().size(), 9u);  // in the default registry too
}

TEST(SimtOperator, its_target_runs_on_every_device_from_sm80_and_not_on_the_host) {
  const Target op = simt::SimtGemmOperator::make_metadata(DType::bf16, DType::bf16).target;
  for (const char* device : {"80", "86", "89", "90a", "100a", "120a"})
    EXPECT_TRUE(Target::parse(device)->can_run(op)) << device;
  EXPECT_FALSE(Target::parse("75")->can_run(op));
  EXPECT_FALSE(Target::cpu().can_run(op));
}

TEST(SimtOperator, serves_every_kind_and_layout_for_its_dtypes) {
  const simt::SimtGemmOperator op(DType::fp32, DType::fp32);
  GroupedGemmArguments m = testing::make_grouped_m(4, 100, 48, 40, DType::fp32, kCuda);
  m.out.dtype = DType::fp32;
  m.A = TensorDesc(DType::fp32, {100, 40}, {1, 100}, kCuda);          // M-major A
  m.B = TensorDesc(DType::fp32, {4, 40, 48}, {40 * 52, 1, 52}, kCuda);  // padded K-major B
  m.zero_tail = true;
  EXPECT_TRUE(op.supports(m, kHopper)) << op.supports(m, kHopper).to_string();
  GroupedGemmArguments n = testing::make_grouped_n(3, 17, 99, 33, DType::fp32, kCuda);
  n.out = TensorDesc(DType::fp32, {17, 99}, {1, 17}, kCuda);  // column-major out
  EXPECT_TRUE(op.supports(n, Target::sm(80))) << op.supports(n, Target::sm(80)).to_string();
  GroupedGemmArguments k = testing::make_grouped_k(3, 17, 9, 64, DType::fp32, kCuda);
  EXPECT_TRUE(op.supports(k, kHopper));
  GemmArguments batched = testing::make_batched(3, 5, 7, 9, DType::fp32, kCuda);
  batched.out.dtype = DType::fp32;
  batched.A = TensorDesc(DType::fp32, {3, 5, 9}, {64, 9, 1}, kCuda);  // batch stride padded
  EXPECT_TRUE(op.supports(batched, kHopper)) << op.supports(batched, kHopper).to_string();
}

/// A (G, MaxM, K) x B (G, K, N) -> out (G, MaxM, N) with device offsets (the counts): fake tensors.
GroupedGemmArguments make_masked(int64_t groups, int64_t max_m, int64_t n, int64_t k, DType t = DType::bf16) {
  return GroupedGemmArguments{TensorDesc::contiguous(t, {groups, max_m, k}, kCuda),
                              TensorDesc::contiguous(t, {groups, k, n}, kCuda),
                              TensorDesc::contiguous(t, {groups, max_m, n}, kCuda), DType::fp32,
                              TensorDesc::contiguous(DType::i32, {groups}, kCuda)};
}

TEST(SimtOperator, offers_the_masked_and_aligned_layouts_without_the_opt_in) {
  // Through the GPU suite and memcheck on an H100 (2026-12-06). Shapes no other test uses: support
  // is memoised per signature.
  const simt::SimtGemmOperator op(DType::bf16, DType::bf16);
  const GroupedGemmArguments masked = make_masked(7, 24, 264, 136);
  GroupedGemmArguments aligned = testing::make_grouped_m(5, 1032, 72, 40, DType::bf16, kCuda);
  aligned.group_alignment = 64;
  EXPECT_TRUE(op.supports(masked, kHopper)) << op.supports(masked, kHopper).to_string();
  EXPECT_TRUE(op.supports(aligned, kHopper)) << op.supports(aligned, kHopper).to_string();
  // The sm90 operators rank first on both (their aligned layout passed the GPU suite and memcheck on
  // an H100, 2026-12-06); the portable operator is offered after them.
  for (const GroupedGemmArguments& g : {masked, aligned}) {
    const std::vector<OperatorPtr> found = get_operators(g, kHopper);
    ASSERT_FALSE(found.empty());
    EXPECT_EQ(found.front()->metadata().provider, "sm90") << found.front()->name();
    EXPECT_TRUE(std::any_of(found.begin(), found.end(),
                            [](const OperatorPtr& o) { return o->metadata().provider == "simt"; }));
  }
}

TEST(SimtOperator, serves_the_masked_form_and_aligned_groups) {
  const simt::SimtGemmOperator op(DType::bf16, DType::bf16);
  GroupedGemmArguments masked = make_masked(8, 16, 256, 128);
  masked.A = TensorDesc(DType::bf16, {8, 16, 128}, {16 * 136, 1, 16}, kCuda);  // M-major, groups padded
  EXPECT_TRUE(op.supports(masked, kHopper)) << op.supports(masked, kHopper).to_string();
  EXPECT_TRUE(op.supports(masked, Target::sm(80))) << op.supports(masked, Target::sm(80)).to_string();
  for (int32_t alignment : {8, 128}) {
    GroupedGemmArguments aligned = testing::make_grouped_m(4, 1024, 64, 32, DType::bf16, kCuda);
    aligned.group_alignment = alignment;
    aligned.zero_tail = true;
    EXPECT_TRUE(op.supports(aligned, kHopper)) << op.supports(aligned, kHopper).to_string();
  }
  // The masked form has no tail: validate() says so before any operator is asked.
  masked.zero_tail = true;
  const Status s = op.supports(masked, kHopper);
  EXPECT_EQ(s.code(), ErrorCode::invalid_argument);
  EXPECT_EQ(s.message().rfind("zero_tail: the masked form has no tail", 0), 0u) << s.message();
}

TEST(SimtOperator, refuses_fp8_inputs_naming_the_operand) {
  const simt::SimtGemmOperator op(DType::bf16, DType::bf16);
  GroupedGemmArguments g = testing::make_grouped_m(4, 64, 32, 32, DType::e4m3, kCuda);
  const Status s = op.supports(g, kHopper);
  EXPECT_EQ(s.code(), ErrorCode::unsupported);
  EXPECT_EQ(s.message(), "A: dtype must be one of bf16; got e4m3");
}

TEST(SimtOperator, refuses_host_tensors_and_pointers_off_their_element) {
  const simt::SimtGemmOperator op(DType::bf16, DType::bf16);
  EXPECT_EQ(op.supports(testing::make_grouped_m(4, 64, 32, 32), Target::cpu()).message(),
            "target: sm80_grouped_gemm_bf16_f32acc_64x64x16_c1x1_simt is built for 80, which does not run on cpu");
  GroupedGemmArguments g = testing::make_grouped_m(4, 64, 32, 32, DType::bf16, kCuda);
  alignas(16) static unsigned char bytes[16];
  g.A.data = bytes + 1;
  const Status s = op.supports(g, kHopper);
  EXPECT_EQ(s.code(), ErrorCode::unsupported);
  EXPECT_EQ(s.message(), "A: data pointer must be aligned to its 2-byte elements; got an address 1 bytes past a boundary");
  g.A.data = bytes + 2;
  g.offsets.data = bytes + 2;
  EXPECT_EQ(op.supports(g, kHopper).message(),
            "offsets: data pointer must be aligned to its 4-byte elements; got an address 2 bytes past a boundary");
}

// ---------------------------------------------------------------- launch plan
TEST(SimtLaunchPlan, strides_and_group_steps_follow_the_form) {
  GroupedGemmArguments n = testing::make_grouped_n(3, 70, 130, 33, DType::bf16, kCuda);
  n.A = TensorDesc(DType::bf16, {3, 70, 33}, {70 * 40, 1, 70}, kCuda);  // M-major A, batches padded
  auto plan = simt::plan_launch(n);
  ASSERT_TRUE(plan) << plan.status().to_string();
  EXPECT_EQ(plan->form, ks::Form::grouped_n);
  const ks::SimtParams& p = plan->params;
  EXPECT_EQ(p.a_group, 70 * 40);
  EXPECT_EQ(p.a_row, 1);
  EXPECT_EQ(p.a_k, 70);
  EXPECT_EQ(p.b_group, 0);
  EXPECT_EQ(p.out_group, 0);
  EXPECT_EQ(p.m, 70);
  EXPECT_EQ(p.n, 130);
  EXPECT_EQ(p.k, 33);
  EXPECT_EQ(p.groups, 3);
  EXPECT_EQ(p.tiles_n, 3);
  EXPECT_EQ(plan->grid_x, 2u * 3u);  // every tile of out; the blocks find their groups
  EXPECT_EQ(plan->grid_y, 1u);
  EXPECT_TRUE(plan->launch);

  auto m = simt::plan_launch(testing::make_grouped_m(5, 100, 64, 32, DType::bf16, kCuda));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->form, ks::Form::grouped_m);
  EXPECT_EQ(m->params.b_group, 32 * 64);
  EXPECT_EQ(m->params.a_group, 0);
  EXPECT_EQ(m->grid_y, 1u);

  auto k = simt::plan_launch(testing::make_grouped_k(7, 10, 20, 300, DType::bf16, kCuda));
  ASSERT_TRUE(k);
  EXPECT_EQ(k->form, ks::Form::grouped_k);
  EXPECT_EQ(k->params.out_group, 10 * 20);
  EXPECT_EQ(k->params.k, 300);
  EXPECT_EQ(k->grid_y, 7u);  // the groups along y

  auto b = simt::plan_launch(testing::make_batched(70000, 3, 5, 7, DType::bf16, kCuda));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->form, ks::Form::dense);
  EXPECT_EQ(b->grid_y, 65535u);  // more batches than gridDim.y allows: blocks loop over them
  EXPECT_EQ(b->params.a_group, 3 * 7);
}

TEST(SimtLaunchPlan, masked_groups_run_along_y_over_their_max_m_rows) {
  GroupedGemmArguments masked = make_masked(6, 130, 70, 40);
  masked.out = TensorDesc(DType::bf16, {6, 130, 70}, {130 * 80, 80, 1}, kCuda);  // rows padded
  auto plan = simt::plan_launch(masked);
  ASSERT_TRUE(plan) << plan.status().to_string();
  EXPECT_EQ(plan->form, ks::Form::grouped_m_masked);
  const ks::SimtParams& p = plan->params;
  EXPECT_EQ(p.m, 130);  // MaxM: the bound of the counts
  EXPECT_EQ(p.n, 70);
  EXPECT_EQ(p.k, 40);
  EXPECT_EQ(p.groups, 6);
  EXPECT_EQ(p.a_group, 130 * 40);
  EXPECT_EQ(p.b_group, 40 * 70);
  EXPECT_EQ(p.out_group, 130 * 80);
  EXPECT_EQ(p.out_row, 80);
  EXPECT_EQ(p.zero_tail, 0);
  EXPECT_EQ(p.group_alignment, 1);
  EXPECT_EQ(plan->grid_x, 3u * 2u);  // the tiles of one group's (MaxM, N)
  EXPECT_EQ(plan->grid_y, 6u);       // the groups
  EXPECT_TRUE(plan->launch);
  EXPECT_EQ(simt::plan_launch(make_masked(70000, 2, 3, 5))->grid_y, 65535u);  // blocks loop over the rest
  EXPECT_FALSE(simt::plan_launch(make_masked(0, 16, 8, 8))->launch);   // no groups
  EXPECT_FALSE(simt::plan_launch(make_masked(4, 0, 8, 8))->launch);    // MaxM = 0
  EXPECT_TRUE(simt::plan_launch(make_masked(4, 16, 8, 0))->launch);    // K = 0: the counted rows are zeros
}

TEST(SimtLaunchPlan, aligned_groups_pass_their_alignment_and_only_the_m_grouped_form_has_one) {
  GroupedGemmArguments aligned = testing::make_grouped_m(5, 1000, 64, 32, DType::bf16, kCuda);
  aligned.group_alignment = 128;
  auto plan = simt::plan_launch(aligned);
  ASSERT_TRUE(plan) << plan.status().to_string();
  EXPECT_EQ(plan->form, ks::Form::grouped_m);
  EXPECT_EQ(plan->params.group_alignment, 128);
  EXPECT_EQ(plan->grid_x, 16u);  // every tile of out: padding rows are skipped inside the blocks
  EXPECT_EQ(simt::plan_launch(testing::make_grouped_m(5, 1000, 64, 32, DType::bf16, kCuda))->params.group_alignment,
            1);
  EXPECT_EQ(simt::plan_launch(testing::make_grouped_n(3, 8, 64, 32, DType::bf16, kCuda))->params.group_alignment, 1);
  EXPECT_EQ(simt::plan_launch(testing::make_grouped_k(3, 8, 8, 64, DType::bf16, kCuda))->params.group_alignment, 1);
  EXPECT_EQ(simt::plan_launch(testing::make_gemm(8, 8, 8, DType::bf16, DType::bf16, kCuda))->params.group_alignment, 1);
}

TEST(SimtLaunchPlan, launches_nothing_when_nothing_is_written) {
  auto no_rows = simt::plan_launch(testing::make_grouped_m(4, 0, 64, 32, DType::bf16, kCuda));
  ASSERT_TRUE(no_rows);
  EXPECT_FALSE(no_rows->launch);
  auto no_cols = simt::plan_launch(testing::make_grouped_n(4, 16, 0, 32, DType::bf16, kCuda));
  ASSERT_TRUE(no_cols);
  EXPECT_FALSE(no_cols->launch);
  GroupedGemmArguments none = testing::make_grouped_m(0, 64, 16, 16, DType::bf16, kCuda);
  EXPECT_FALSE(simt::plan_launch(none)->launch);
  none.zero_tail = true;  // no groups, but every row is tail: zeros to write
  EXPECT_TRUE(simt::plan_launch(none)->launch);
  EXPECT_EQ(simt::plan_launch(none)->params.zero_tail, 1);
  auto k_zero = simt::plan_launch(testing::make_gemm(16, 16, 0, DType::bf16, DType::bf16, kCuda));
  ASSERT_TRUE(k_zero);
  EXPECT_TRUE(k_zero->launch);  // K = 0 still writes zeros
  GroupedGemmArguments k_grouped = testing::make_grouped_k(3, 8, 8, 8, DType::bf16, kCuda);
  k_grouped.zero_tail = true;  // every element is written anyway
  EXPECT_EQ(simt::plan_launch(k_grouped)->params.zero_tail, 0);
}

TEST(SimtLaunchPlan, refuses_sizes_past_its_32_bit_indices_naming_out) {
  const simt::SimtGemmOperator op(DType::bf16, DType::bf16);
  const Status s = op.supports(testing::make_gemm(int64_t{1} << 31, 8, 8, DType::bf16, DType::bf16, kCuda), kHopper);
  EXPECT_EQ(s.code(), ErrorCode::unsupported);
  EXPECT_EQ(s.message().rfind("out: simt kernels index rows with 32-bit integers", 0), 0u) << s.message();
}

// ---------------------------------------------------------------- discovery and estimates
/// Shapes from decode to prefill, every kind, in the bf16 layouts the sm90 operators serve.
std::vector<Arguments> hopper_shapes(Device device) {
  std::vector<Arguments> out;
  for (auto [G, rows, n, k] : {std::tuple{12, 8192, 2048, 1024}, std::tuple{256, 256, 7168, 256},
                               std::tuple{128, 65536, 4096, 384}, std::tuple{1030, 1030, 64, 72},
                               std::tuple{8, 64, 64, 64}, std::tuple{4, 512, 512, 8}}) {
    GroupedGemmArguments m = testing::make_grouped_m(G, rows, n, k, DType::bf16, device);
    m.B = TensorDesc(DType::bf16, {G, k, n}, {int64_t{n} * k, 1, k}, device);
    out.push_back(m);
    GroupedGemmArguments w = testing::make_grouped_k(G, k, n, rows, DType::bf16, device);
    w.A = TensorDesc(DType::bf16, {k, rows}, {1, k}, device);
    out.push_back(w);
    out.push_back(testing::make_gemm(rows, n, k, DType::bf16, DType::bf16, device));
    out.push_back(testing::make_batched(4, rows / 4, n, k, DType::bf16, device));
    GroupedGemmArguments aligned = m;  // the same rows, groups at multiples of 128
    aligned.group_alignment = 128;
    out.push_back(aligned);
    const int64_t max_m = std::max<int64_t>(rows / G, 1);  // the masked form over the same rows
    GroupedGemmArguments masked{TensorDesc::contiguous(DType::bf16, {G, max_m, k}, device),
                                TensorDesc(DType::bf16, {G, k, n}, {int64_t{n} * k, 1, k}, device),
                                TensorDesc::contiguous(DType::bf16, {G, max_m, n}, device), DType::fp32,
                                TensorDesc::contiguous(DType::i32, {G}, device)};
    out.push_back(masked);
  }
  out.push_back(testing::make_gemm(4096, 4096, 0, DType::bf16, DType::bf16, device));  // zeros only
  return out;
}

/// A grid of sizes with the corners where sm90 estimates are highest per FLOP: tiny or many
/// groups, 1-row groups, K = 0 and long K, narrow N, fp32 outputs (their stores cost most).
std::vector<Arguments> estimate_grid() {
  std::vector<Arguments> out;
  for (int64_t G : {1, 8, 256, 1030})
    for (int64_t rows : {1, 64, 1030, 8192})
      for (int64_t n : {8, 72, 2048})
        for (int64_t k : {0, 64, 7168})
          for (DType o : {DType::bf16, DType::fp32}) {
            GroupedGemmArguments m = testing::make_grouped_m(G, rows, n, k, DType::bf16, kCuda);
            m.B = TensorDesc(DType::bf16, {G, k, n}, {n * k, 1, k}, kCuda);
            m.out.dtype = o;
            GroupedGemmArguments w = testing::make_grouped_k(G, k, n, rows, DType::bf16, kCuda);
            w.A = TensorDesc(DType::bf16, {k, rows}, {1, k}, kCuda);
            w.out.dtype = o;
            GemmArguments b = testing::make_batched(G, rows, n, k, DType::bf16, kCuda);
            b.out.dtype = o;
            out.insert(out.end(), {m, w, testing::make_gemm(rows, n, k, DType::bf16, o, kCuda), b});
          }
  return out;
}

// The portable operator is chosen only where no sm90 operator serves. (Not after every one of them:
// a _ring2 design runs more than 164 groups as several launches, which can cost more than the
// portable kernel's one on problems with no work to speak of, e.g. K = 0 over 1030 groups.)
TEST(SimtEstimate, ranks_after_the_best_sm90_operator_that_serves_the_same_arguments) {
  // The masked and aligned layouts are served here only on request until they pass the GPU suite.
  testing::ScopedEnv trial{{"GEMMOPS_TRIAL_DESIGNS", "1"}};
  int compared = 0;
  std::vector<Arguments> all = hopper_shapes(kCuda), grid = estimate_grid();
  all.insert(all.end(), grid.begin(), grid.end());
  for (const Arguments& args : all) {
    const std::vector<OperatorPtr> ops = get_operators(args, kHopper);
    const std::vector<OperatorPtr> sm90 = by_provider(ops, "sm90"), simt = by_provider(ops, "simt");
    ASSERT_EQ(simt.size(), 1u) << operand_a(args).describe();
    if (sm90.empty()) continue;  // e.g. an M-major A of an M-grouped problem
    EXPECT_LT(sm90[0]->estimated_time_us(args, kHopper), simt[0]->estimated_time_us(args, kHopper))
        << sm90[0]->name() << " on A " << operand_a(args).describe() << ", B " << operand_b(args).describe();
    EXPECT_EQ(ops.front(), sm90[0]) << "an sm90 operator comes first";
    ++compared;
  }
  EXPECT_GT(compared, 400);
}

TEST(SimtEstimate, ranks_before_the_cpu_operator_on_sizes_worth_a_gpu) {
  // The masked and aligned layouts are served here only on request until they pass the GPU suite.
  testing::ScopedEnv trial{{"GEMMOPS_TRIAL_DESIGNS", "1"}};
  const std::vector<Arguments> cuda = hopper_shapes(kCuda), host = hopper_shapes(Device::cpu());
  for (size_t i = 0; i < cuda.size(); ++i) {
    const ProblemShape shape = problem_shape(cuda[i]).value();
    if (shape.flops() < 1e8) continue;  // a launch costs more than the host needs for these
    const std::vector<OperatorPtr> simt = by_provider(get_operators(cuda[i], kHopper), "simt");
    const std::vector<OperatorPtr> cpu = get_operators(host[i], Target::cpu());
    ASSERT_EQ(simt.size(), 1u);
    ASSERT_EQ(cpu.size(), 1u);
    EXPECT_LT(simt[0]->estimated_time_us(cuda[i], kHopper), cpu[0]->estimated_time_us(host[i], Target::cpu()))
        << operand_a(cuda[i]).describe();
  }
}

TEST(SimtDiscovery, serves_first_what_the_sm90_operators_do_not) {
  // fp32 inputs; the N-grouped form; an M-major A in the M-grouped form; a padded batch stride.
  GroupedGemmArguments fp32 = testing::make_grouped_m(8, 512, 256, 128, DType::fp32, kCuda);
  fp32.out.dtype = DType::fp32;
  GroupedGemmArguments n_grouped = testing::make_grouped_n(8, 512, 2048, 256, DType::bf16, kCuda);
  GroupedGemmArguments m_major = testing::make_grouped_m(8, 512, 256, 128, DType::bf16, kCuda);
  m_major.A = TensorDesc(DType::bf16, {512, 128}, {1, 512}, kCuda);
  GemmArguments padded = testing::make_batched(4, 100, 256, 128, DType::bf16, kCuda);
  padded.A = TensorDesc(DType::bf16, {4, 100, 128}, {104 * 128, 128, 1}, kCuda);
  for (const Arguments& args : {Arguments(fp32), Arguments(n_grouped), Arguments(m_major), Arguments(padded)}) {
    const std::vector<OperatorPtr> ops = get_operators(args, kHopper);
    ASSERT_FALSE(ops.empty()) << operand_a(args).describe();
    EXPECT_EQ(ops.front()->metadata().provider, "simt") << operand_a(args).describe();
  }
}

TEST(SimtDiscovery, the_sm90_operators_say_in_one_sentence_why_not_the_n_grouped_form) {
  int rejected = 0;
  for (const Rejection& r : get_rejections(testing::make_grouped_n(8, 512, 2048, 256, DType::bf16, kCuda), kHopper)) {
    if (r.op == nullptr || r.op->metadata().provider != "sm90") continue;
    EXPECT_EQ(r.reason.code(), ErrorCode::unsupported);
    if (r.op->metadata().constraints.a_dtypes.at(0) == DType::e4m3) {  // the fp8 main loop: M-grouped, masked
      EXPECT_EQ(r.reason.message(), "operation: must be one of grouped_gemm_m, grouped_gemm_m_masked; got grouped_gemm_n");
      continue;
    }
    // The designs of 192 accumulators a thread serve no K-grouped form (their producer's registers).
    const bool k_grouped = testing::serves(*r.op, OperationKind::grouped_k);
    const Design& d = r.op->metadata().design;
    EXPECT_TRUE(k_grouped || testing::design_serves_m_grouped_only(d)) << r.op->name();
    EXPECT_EQ(r.reason.message(), std::string("operation: must be one of grouped_gemm_m, gemm, batched_gemm, ") +
                                      (k_grouped ? "grouped_gemm_k, " : "") + "grouped_gemm_m_masked; got grouped_gemm_n");
    ++rejected;
  }
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace gemmops
