// tests/compile/test_sm90_m_major_out_compile.cpp: the K-grouped sm90 kernels storing out M-major
// (KernelConfig::out_m_major: each box transposed in the TMA staging ring, stored through a 3D map)
// compile with NVRTC for sm_90a, keep wgmma asynchronous and spill nothing on every TMA-store design
// that serves the K-grouped form, plain and with A gathered along K (the MoE's dW1 of an
// nn.Linear-style weight)
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "gemmops/gemmops.hpp"
#include "jit/compile.hpp"
#include "jit/nvrtc_api.hpp"
#include "sm90/designs.hpp"
#include "sm90/kernel_compile.hpp"
#include "sm90/kernel_config.hpp"
#include "support/ptxas_log.hpp"

namespace gemmops {
namespace {

using sm90::Sm90Design;
using testing::expect_clean_compile;

struct MMajorCase {
  const Sm90Design* design;
  bool gather_a;
  std::string label;
};

sm90::KernelConfig m_major(const Sm90Design& d, bool gather_a) {
  return sm90::make_kernel_config(d, DType::bf16, DType::bf16, Major::mn, Major::mn, true, {}, gather_a, false, true);
}

std::vector<MMajorCase> cases() {
  std::vector<MMajorCase> out;
  for (const Sm90Design& d : sm90::sm90_designs()) {
    const sm90::KernelConfig c = m_major(d, false);
    // The TMA store; designs serving K-grouped.
    if (c.epilogue != 1 || c.wide_accumulators() || !sm90::cluster_n_refusal(c).empty()) continue;
    out.push_back({&d, false, testing::test_label(d.design.to_string())});
    if (sm90::gather_k_refusal(m_major(d, true)).empty())
      out.push_back({&d, true, testing::test_label(d.design.to_string() + "_gathered_a")});
  }
  return out;
}

void PrintTo(const MMajorCase& c, std::ostream* os) { *os << c.label; }

class Sm90MMajorOutCompile : public ::testing::TestWithParam<MMajorCase> {};

TEST_P(Sm90MMajorOutCompile, compiles_spill_free_with_wgmma_asynchronous) {
  if (auto api = jit::nvrtc(); !api) GTEST_SKIP() << api.status().message();
  const MMajorCase& c = GetParam();
  jit::CompileRequest req =
      sm90::make_compile_request("sm90_m_major_out_" + c.label, m_major(*c.design, c.gather_a), Target::sm(90, true));
  ASSERT_EQ(req.name_expressions.size(), 1u);
  EXPECT_NE(req.name_expressions[0].find(".out_m_major = true"), std::string::npos) << req.name_expressions[0];
  expect_clean_compile(std::move(req), c.label);
}

INSTANTIATE_TEST_SUITE_P(Sm90, Sm90MMajorOutCompile, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<MMajorCase>& info) { return info.param.label; });

TEST(Sm90MMajorOutCases, cover_the_tma_store_designs_and_the_gathered_a) {
  int gathered = 0;
  for (const MMajorCase& c : cases()) gathered += c.gather_a;
  EXPECT_GE(cases().size(), 8u);
  EXPECT_GE(gathered, 4);
}

}  // namespace
}  // namespace gemmops
