// tests/unit/test_sm90_cluster_along_n.cpp: designs whose two CTAs share A along N (cluster_n): the
// kernel config they make, the forms they refuse with the rule, and the kernels of every other
// design keeping their instantiation text (their cache keys)
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <string>

#include "sm90/designs.hpp"
#include "sm90/kernel_config.hpp"

namespace gemmops::sm90 {
namespace {

const Sm90Design* first_along_n() {
  for (const Sm90Design& d : sm90_designs())
    if (d.design.cluster_n > 1) return &d;
  return nullptr;
}

TEST(Sm90ClusterAlongN, a_unit_is_one_tile_high_and_two_wide_and_each_cta_loads_half_of_a) {
  const Sm90Design* d = first_along_n();
  ASSERT_NE(d, nullptr) << "no design with a cluster along N is registered";
  EXPECT_TRUE(d->trial) << d->design.to_string() << ": not yet fitted by a sweep";
  const KernelConfig c = make_kernel_config(*d, DType::bf16, DType::bf16, Major::k, Major::k, false);
  EXPECT_EQ(c.cluster_m, 1);
  EXPECT_EQ(c.cluster_n, 2);
  EXPECT_EQ(c.cluster_size(), 2);
  EXPECT_EQ(c.unit_m(), c.tile_m);
  EXPECT_EQ(c.unit_n(), 2 * c.tile_n);
  EXPECT_EQ(c.a_rows_per_cta(), c.tile_m / 2);
  EXPECT_EQ(c.b_rows_per_cta(), c.tile_n);  // B is not shared
  EXPECT_FALSE(has_split_k_twin(c));
  EXPECT_NE(instantiation_text(c).find(".cluster_n = 2"), std::string::npos) << instantiation_text(c);
}

TEST(Sm90ClusterAlongN, other_designs_keep_their_kernel_text) {
  for (const Sm90Design& d : sm90_designs()) {
    if (d.design.cluster_n > 1) continue;
    const std::string text = instantiation_text(make_kernel_config(d, DType::bf16, DType::bf16, Major::k, Major::k, false));
    EXPECT_EQ(text.find("cluster_n"), std::string::npos) << text;
  }
}

TEST(Sm90ClusterAlongN, the_k_grouped_form_fp8_and_a_gathered_a_are_refused_naming_the_rule) {
  const Sm90Design* d = first_along_n();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(cluster_n_refusal(make_kernel_config(*d, DType::bf16, DType::bf16, Major::k, Major::k, false)), "");
  const std::string k_grouped =
      cluster_n_refusal(make_kernel_config(*d, DType::bf16, DType::bf16, Major::mn, Major::mn, true));
  EXPECT_EQ(k_grouped.rfind("offsets: the K-grouped form runs on designs without a cluster along N", 0), 0u) << k_grouped;
  const std::string fp8 = cluster_n_refusal(make_kernel_config(*d, DType::e4m3, DType::bf16, Major::k, Major::k, false));
  EXPECT_EQ(fp8.rfind("A: fp8 runs on designs without a cluster along N", 0), 0u) << fp8;
  const std::string gathered = gather_a_refusal(
      make_kernel_config(*d, DType::bf16, DType::bf16, Major::k, Major::k, false, {}, /*gather_a=*/true));
  EXPECT_NE(gathered.find("without a cluster along N"), std::string::npos) << gathered;
  EXPECT_EQ(gathered.rfind("a_row_index: ", 0), 0u) << gathered;
}

}  // namespace
}  // namespace gemmops::sm90
