// tests/unit/test_occupancy_fake.cpp: max_active_clusters against a fake driver (query shape, cache)
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "cuda/occupancy.hpp"
#include "support/fake_driver.hpp"

namespace gemmops {
namespace {

struct SeenQuery {
  int calls = 0;
  unsigned cluster_x = 0, smem = 0;
};
SeenQuery& seen() {
  static SeenQuery s;
  return s;
}

TEST(FakeOccupancy, asks_the_driver_with_the_cluster_attribute_and_caches_the_answer) {
  testing::ScopedFakeDriver fake;
  seen() = {};
  fake.api().cuOccupancyMaxActiveClusters = [](int* n, CUfunction, const CUlaunchConfig* c) {
    ++seen().calls;
    seen().smem = c->sharedMemBytes;
    for (unsigned i = 0; i < c->numAttrs; ++i)
      if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) seen().cluster_x = c->attrs[i].value.clusterDim.x;
    *n = 64;  // fewer than SMs / 2: GPCs with an odd free SM
    return CUDA_SUCCESS;
  };
  cuda::LaunchConfig lc;
  lc.grid[0] = 132;
  lc.block[0] = 384;
  lc.cluster[0] = 2;
  lc.smem_bytes = 200 * 1024;
  const auto fn = reinterpret_cast<CUfunction>(0x4001);
  auto n = cuda::max_active_clusters(fake.api(), fn, lc);
  ASSERT_TRUE(n) << n.status().to_string();
  EXPECT_EQ(*n, 64);
  EXPECT_EQ(seen().cluster_x, 2u);
  EXPECT_EQ(seen().smem, 200u * 1024u);
  // The smem limit is raised before the query (the driver answers for the shape as launched).
  bool raised = false;
  for (const auto& a : fake.state().attributes)
    raised |= a.fn == fn && a.attr == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES && a.value == 200 * 1024;
  EXPECT_TRUE(raised);
  auto again = cuda::max_active_clusters(fake.api(), fn, lc);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, 64);
  EXPECT_EQ(seen().calls, 1);
}

TEST(FakeOccupancy, reports_a_driver_failure) {
  testing::ScopedFakeDriver fake;
  fake.api().cuOccupancyMaxActiveClusters = [](int*, CUfunction, const CUlaunchConfig*) {
    return CUDA_ERROR_INVALID_VALUE;
  };
  cuda::LaunchConfig lc;
  lc.grid[0] = 2;
  lc.cluster[0] = 2;
  auto n = cuda::max_active_clusters(fake.api(), reinterpret_cast<CUfunction>(0x4002), lc);
  ASSERT_FALSE(n);
  EXPECT_NE(n.status().message().find("cuOccupancyMaxActiveClusters"), std::string::npos) << n.status().message();
}

}  // namespace
}  // namespace gemmops
