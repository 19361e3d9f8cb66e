// tests/gpu/test_router_topk_device.cpp: router_topk() and its backward on the device: the host's choice
// exactly, its weights and logits' gradient to rounding, every dtype and row width (1 .. 1024 experts),
// padded rows, biases, renormalisation, T up to 65536; twice alike, bit for bit
// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "gemmops/device.hpp"
#include "gemmops/moe.hpp"
#include "support/device_problem.hpp"
#include "support/router_problem.hpp"

namespace gemmops::testing {
namespace {

/// ids, weights and grad_logits as the device leaves them (poisoned first).
std::vector<HostTensor> run_on_device(const RouterProblem& p) {
  std::vector<HostTensor> got = {p.ids, p.weights, p.grad_logits};
  auto logits = upload(p.logits), ids = upload(p.ids), weights = upload(p.weights),
       grad_w = upload(p.grad_weights), grad_l = upload(p.grad_logits);
  auto bias = upload(p.spec.bias != 0 ? p.bias : p.ids);
  EXPECT_TRUE(logits && ids && weights && grad_w && grad_l && bias);
  if (!(logits && ids && weights && grad_w && grad_l && bias)) return got;
  RouterTopkArguments a{on(p.logits, *logits), p.spec.k, p.spec.renormalize, std::nullopt, on(p.ids, *ids),
                        on(p.weights, *weights)};
  if (p.spec.bias != 0) a.selection_bias = on(p.bias, *bias);
  Status s = router_topk(a);
  EXPECT_TRUE(s) << s.to_string();
  RouterTopkBackwardArguments b{a.logits, a.topk_ids, on(p.grad_weights, *grad_w), p.spec.renormalize,
                                on(p.grad_logits, *grad_l)};
  s = router_topk_backward(b);
  EXPECT_TRUE(s) << s.to_string();
  EXPECT_TRUE(synchronize());
  DeviceBuffer* bufs[] = {&*ids, &*weights, &*grad_l};
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(bufs[i]->copy_to_host(got[i].storage.data(), got[i].storage.size()));
  return got;
}

TEST(RouterTopkDevice, equals_the_host_choice_and_weights_and_repeats) {
  GEMMOPS_SKIP_WITHOUT_DEVICE("80");
  uint32_t seed = 11;
  struct Case { int64_t tokens; int experts, k; DType dtype; bool renormalize; int bias; int64_t pad; };
  const Case cases[] = {{1, 1, 1, DType::fp32, false, 0, 0},      {37, 8, 2, DType::bf16, true, 0, 3},
                        {8192, 128, 8, DType::bf16, false, 2, 0}, {513, 60, 32, DType::fp16, true, 1, 0},
                        {1000, 256, 8, DType::fp32, true, 1, 8},  {300, 384, 6, DType::bf16, false, 0, 0},
                        {200, 1024, 4, DType::fp32, false, 2, 0}, {65536, 128, 8, DType::bf16, true, 0, 0},
                        {0, 16, 2, DType::bf16, false, 0, 0}};
  for (const Case& c : cases) {
    auto p = RouterProblem::make(RouterSpec{c.tokens, c.experts, c.k, c.dtype, c.renormalize, c.bias, c.pad, seed++});
    const auto got = run_on_device(p);
    auto host = p;
    ASSERT_TRUE(router_topk(host.arguments()));
    ASSERT_TRUE(router_topk_backward(host.backward_arguments()));
    const std::string what = std::string(name(c.dtype)) + " T=" + std::to_string(c.tokens) + " E=" +
                             std::to_string(c.experts) + " k=" + std::to_string(c.k);
    ASSERT_EQ(std::memcmp(got[0].storage.data(), host.ids.storage.data(), host.ids.storage.size()), 0) << what << ": ids";
    for (int64_t i = 0; i < host.weights.numel(); ++i) {
      ASSERT_NEAR(got[1].get(i), host.weights.get(i), 1e-6 * (1 + host.weights.get(i))) << what << ": weight " << i;
    }
    const double tol = c.dtype == DType::fp32 ? 1e-6 : c.dtype == DType::fp16 ? 1e-3 : 8e-3;
    // p * (g - sum p g) cancels: the error scales with the gradient's largest entry, not with each one.
    double scale = 0;
    for (int64_t i = 0; i < host.grad_logits.numel(); ++i) scale = std::max(scale, std::abs(host.grad_logits.get(i)));
    for (int64_t i = 0; i < host.grad_logits.numel(); ++i) {
      const double want = host.grad_logits.get(i);
      ASSERT_NEAR(got[2].get(i), want, tol * (std::abs(want) + scale)) << what << ": grad_logits " << i;
    }
    const auto again = run_on_device(p);
    for (int i = 0; i < 3; ++i)
      EXPECT_EQ(std::memcmp(again[i].storage.data(), got[i].storage.data(), got[i].storage.size()), 0) << what << " " << i;
  }
}

}  // namespace
}  // namespace gemmops::testing
