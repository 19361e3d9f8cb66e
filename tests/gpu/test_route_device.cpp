// tests/gpu/test_route_device.cpp: route() on the device gives the host's rows bit for bit (one chunk
// and many, skewed and sentinel routings, 1 to 8192 experts, no pairs), twice alike, with the chunked
// kernels and with the wide ones (each forced by GEMMOPS_ROUTE_KERNELS), and refuses a workspace too small
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "gemmops/device.hpp"
#include "gemmops/moe.hpp"
#include "support/device_problem.hpp"
#include "support/route_problem.hpp"
#include "support/scoped_env.hpp"

namespace gemmops::testing {
namespace {

/// The outputs as the device leaves them (poisoned first), in offsets, token, pair, sorted_scores order.
std::vector<HostTensor> run_on_device(RouteProblem& p, std::size_t workspace_bytes, Status* status = nullptr) {
  std::vector<HostTensor> got = {p.offsets, p.token, p.pair, p.sorted_scores};
  auto ids = upload(p.ids), scores = upload(p.scores), offsets = upload(p.offsets), token = upload(p.token),
       pair = upload(p.pair), sorted = upload(p.sorted_scores);
  auto ws = DeviceBuffer::allocate(workspace_bytes > 0 ? workspace_bytes : 1);
  EXPECT_TRUE(ids && scores && offsets && token && pair && sorted && ws);
  if (!(ids && scores && offsets && token && pair && sorted && ws)) return got;
  RouteArguments a{on(p.ids, *ids), p.spec.experts, on(p.offsets, *offsets), on(p.token, *token),
                   on(p.pair, *pair), std::nullopt, std::nullopt};
  if (p.spec.scores) a.scores = on(p.scores, *scores), a.sorted_scores = on(p.sorted_scores, *sorted);
  const Status s = route(a, nullptr, Workspace{ws->data(), workspace_bytes});
  if (status != nullptr) *status = s;
  else EXPECT_TRUE(s) << s.to_string();
  EXPECT_TRUE(synchronize());
  DeviceBuffer* bufs[] = {&*offsets, &*token, &*pair, &*sorted};
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(bufs[i]->copy_to_host(got[i].storage.data(), got[i].storage.size()));
  return got;
}

void expect_same(const std::vector<HostTensor>& got, const std::vector<HostTensor>& want, bool scores,
                 const std::string& what) {
  const char* names[] = {"offsets", "token", "pair", "sorted_scores"};
  for (int i = 0; i < (scores ? 4 : 3); ++i) {
    ASSERT_EQ(got[i].storage.size(), want[i].storage.size()) << what;
    EXPECT_EQ(std::memcmp(got[i].storage.data(), want[i].storage.data(), got[i].storage.size()), 0)
        << what << ": " << names[i];
  }
}

TEST(RouteDevice, equals_the_host_bit_for_bit_and_repeats) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("80");
  uint32_t seed = 1;
  struct Case { int64_t tokens, k; int experts; double sentinels, skew; };
  const Case cases[] = {{1, 1, 1, 0.0, 0.0},       {37, 8, 128, 0.1, 0.3},   {513, 2, 8, 0.0, 0.9},
                        {8192, 8, 128, 0.02, 0.0}, {4096, 8, 256, 0.0, 0.5}, {3000, 6, 8192, 0.05, 0.0},
                        {65536, 8, 384, 0.01, 0.2}, {0, 8, 16, 0.0, 0.0}};
  for (const char* kernels : {"chunked", "wide"}) {
   ScopedEnv env{{"GEMMOPS_ROUTE_KERNELS", kernels}};
   for (const Case& c : cases) {
    RouteSpec s{c.tokens, c.k, c.experts, c.sentinels, c.skew, (seed % 2) == 1, seed};
    ++seed;
    auto p = RouteProblem::make(s);
    const std::size_t ws = route_workspace_size(c.tokens * c.k, c.experts);
    const auto got = run_on_device(p, ws);
    auto host = p;  // the same inputs, routed on the host
    ASSERT_TRUE(route(host.arguments()));
    const std::string what = std::string(kernels) + " kernels, T=" + std::to_string(c.tokens) +
                             " k=" + std::to_string(c.k) + " E=" + std::to_string(c.experts);
    expect_same(got, {host.offsets, host.token, host.pair, host.sorted_scores}, s.scores, what);
    expect_same(run_on_device(p, ws), got, s.scores, what + ", second run");
   }
  }
}

TEST(RouteDevice, a_workspace_too_small_is_refused_naming_it) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("80");
  auto p = RouteProblem::make(RouteSpec{5000, 2, 64});
  Status s;
  run_on_device(p, route_workspace_size(10000, 64) - 4, &s);
  EXPECT_FALSE(s);
  EXPECT_NE(s.to_string().find("workspace: route needs"), std::string::npos) << s.to_string();
}

}  // namespace
}  // namespace gemmops::testing
