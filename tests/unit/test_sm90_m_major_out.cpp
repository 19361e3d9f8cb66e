// tests/unit/test_sm90_m_major_out.cpp: the K-grouped form's out stored M-major (each group's result
// transposed in memory, as an nn.Linear-style weight's gradient is): what the constraints admit, what
// the sm90 plans serve (the TMA-store designs, as a trial until the GPU suite passes it) and refuse
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <string>

#include "gemmops/gemmops.hpp"
#include "sm90/designs.hpp"
#include "sm90/kernel_config.hpp"
#include "support/problems.hpp"
#include "support/scoped_env.hpp"

namespace gemmops {
namespace {

/// K-grouped (G, M, N) out as the transposed view of a contiguous (G, N, M) bf16 tensor.
GroupedGemmArguments m_major_out(int64_t groups, int64_t m, int64_t n, int64_t total_k, Device device) {
  GroupedGemmArguments g = testing::make_grouped_k(groups, m, n, total_k, DType::bf16, device);
  g.A = TensorDesc(DType::bf16, {m, total_k}, {1, m}, device);  // M-major A, as the weight gradients have
  g.B = TensorDesc::contiguous(DType::bf16, {total_k, n}, device);
  g.out = TensorDesc(DType::bf16, {groups, m, n}, {n * m, 1, m}, device);
  return g;
}

TEST(M_majorOut, the_constraints_admit_it_only_where_the_operator_says_so_and_only_k_grouped) {
  OperandConstraints c;
  c.out_row_major = true;
  const GroupedGemmArguments g = m_major_out(4, 64, 32, 256, Device::cpu());
  Status s = check_constraints(c, g);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "out: last dimension must have stride 1 (row-major); got strides (2048, 1, 64)");
  c.k_grouped_out_m_major = true;
  EXPECT_TRUE(check_constraints(c, g)) << check_constraints(c, g).to_string();
  // An M-grouped out with stride 1 along rows is still refused, naming the K-grouped exception.
  GroupedGemmArguments m = testing::make_grouped_m(4, 64, 8, 16);
  m.out = TensorDesc(DType::fp32, {64, 8}, {1, 64}, Device::cpu());
  s = check_constraints(c, m);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("or, K-grouped, stride 1 along M"), std::string::npos) << s.message();
  // A trial layout is refused without the opt-in, saying how to ask.
  c.trial_k_grouped_out_m_major = true;
  {
    testing::ScopedEnv no{{"GEMMOPS_TRIAL_DESIGNS", "0"}};
    s = check_constraints(c, g);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("out: a K-grouped out stored M-major has not yet passed the GPU suite"),
              std::string::npos)
        << s.message();
  }
  testing::ScopedEnv yes{{"GEMMOPS_TRIAL_DESIGNS", "1"}};
  EXPECT_TRUE(check_constraints(c, g));
}

TEST(M_majorOut, sm90_tma_store_designs_serve_it_and_direct_store_ones_say_why_not) {
  testing::ScopedEnv verified_only{{"GEMMOPS_TRIAL_DESIGNS", "0"}};  // offered without the opt-in since it passed
  const GroupedGemmArguments g = m_major_out(8, 2048, 1536, 4096, Device::cuda(0));
  const Target t = Target::sm(90, true);
  int served = 0, refused = 0;
  for (const OperatorPtr& op : get_operators(g, t)) {
    if (op->metadata().provider != "sm90") continue;
    EXPECT_NE(op->name().find("_tma"), std::string::npos) << op->name() << " serves it without the TMA store";
    ++served;
  }
  for (const Rejection& r : get_rejections(g, t)) {
    if (r.op->metadata().provider != "sm90" || r.op->name().find("bf16_f32acc") == std::string::npos) continue;
    if (r.reason.message().find("stores directly: its _tma twins serve it") != std::string::npos) ++refused;
  }
  EXPECT_GT(served, 2);
  EXPECT_GT(refused, 2);
}

TEST(M_majorOut, the_kernel_text_names_the_m_major_store_and_nothing_else_changes) {
  const sm90::Sm90Design& d = sm90::sm90_designs()[3];  // a TMA-store design
  const auto plain = sm90::make_kernel_config(d, DType::bf16, DType::bf16, Major::mn, Major::mn, true);
  const auto m_major = sm90::make_kernel_config(d, DType::bf16, DType::bf16, Major::mn, Major::mn, true, {}, false,
                                                false, true);
  const std::string a = sm90::instantiation_text(plain), b = sm90::instantiation_text(m_major);
  EXPECT_EQ(a.find("out_m_major"), std::string::npos) << a;
  EXPECT_EQ(b, a.substr(0, a.size() - 2) + ", .out_m_major = true}>");
}

}  // namespace
}  // namespace gemmops
