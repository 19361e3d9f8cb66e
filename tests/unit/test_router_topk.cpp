// tests/unit/test_router_topk.cpp: router_topk() and its backward on the host against float64 (the
// choice exact, the weights and the logits' gradient close), on every logits dtype, padded rows,
// selection biases and renormalisation; validate()'s rules, each error naming the operand
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "gemmops/moe.hpp"
#include "support/router_problem.hpp"

namespace gemmops::testing {
namespace {

double tolerance(DType d) { return d == DType::fp32 ? 2e-6 : d == DType::fp16 ? 2e-3 : 1e-2; }

void expect_forward(const RouterProblem& p, const std::string& what) {
  for (int64_t t = 0; t < p.spec.tokens; ++t) {
    const std::vector<int> c = p.choice(t);
    for (int j = 0; j < p.spec.k; ++j) {
      ASSERT_EQ(p.ids.get(t * p.spec.k + j), c[static_cast<size_t>(j)]) << what << ": token " << t << " choice " << j;
      ASSERT_NEAR(p.weights.get(t * p.spec.k + j), p.weight(t, j), 2e-6 * (1 + p.weight(t, j)))
          << what << ": token " << t << " choice " << j;
    }
  }
}

void expect_backward(const RouterProblem& p, const std::string& what) {
  for (int64_t t = 0; t < p.spec.tokens; ++t) {
    const std::vector<double> want = p.logits_gradient(t);
    double scale = 0;
    for (double v : want) scale = std::max(scale, std::abs(v));
    for (int e = 0; e < p.spec.experts; ++e) {
      ASSERT_NEAR(p.grad_logits.get(t * p.spec.experts + e), want[static_cast<size_t>(e)],
                  tolerance(p.spec.dtype) * scale + 1e-7)
          << what << ": token " << t << " expert " << e;
    }
  }
}

TEST(RouterTopk, chooses_and_weighs_as_float64_on_the_host_with_its_gradient) {
  uint32_t seed = 1;
  for (DType dtype : {DType::fp32, DType::bf16, DType::fp16}) {
    for (auto [experts, k] : {std::pair{1, 1}, {8, 2}, {128, 8}, {60, 32}, {384, 8}, {1024, 4}}) {
      for (bool renormalize : {false, true}) {
        for (int bias : {0, 1, 2}) {
          RouterSpec s{19, experts, k, dtype, renormalize, bias, seed % 3 == 0 ? 5 : 0, seed};
          ++seed;
          auto p = RouterProblem::make(s);
          const std::string what = std::string(name(dtype)) + " E=" + std::to_string(experts) + " k=" +
                                   std::to_string(k) + (renormalize ? " renormalized" : "") + " bias " +
                                   std::to_string(bias);
          ASSERT_TRUE(router_topk(p.arguments())) << what;
          expect_forward(p, what);
          ASSERT_TRUE(router_topk_backward(p.backward_arguments())) << what;
          expect_backward(p, what);
        }
      }
    }
  }
}

TEST(RouterTopk, backward_skips_sentinel_ids_and_sums_a_repeated_one) {
  RouterSpec s{3, 8, 4, DType::fp32, false, 0, 0, 7};
  auto p = RouterProblem::make(s);
  ASSERT_TRUE(router_topk(p.arguments()));
  // Token 0: a sentinel in choice 1 (no gradient); token 1: choice 2 repeats choice 0's expert.
  p.ids.set(1, -1);
  p.ids.set(1 * 4 + 2, p.ids.get(1 * 4 + 0));
  ASSERT_TRUE(router_topk_backward(p.backward_arguments()));
  for (int64_t t = 0; t < 2; ++t) {
    // The float64 reference with the sentinel's weight gradient dropped.
    RouterProblem q = p;
    if (t == 0) q.grad_weights.set(1, 0.0), q.ids.set(1, 0);
    const std::vector<double> want = q.logits_gradient(t);
    for (int e = 0; e < 8; ++e) EXPECT_NEAR(p.grad_logits.get(t * 8 + e), want[static_cast<size_t>(e)], 1e-6) << t << " " << e;
  }
}

TEST(RouterTopk, refuses_bad_arguments_naming_the_operand) {
  auto p = RouterProblem::make(RouterSpec{4, 8, 2, DType::bf16});
  auto expect_error = [](const Status& s, const std::string& operand, const std::string& rule) {
    ASSERT_FALSE(s) << operand;
    EXPECT_EQ(s.message().rfind(operand + ":", 0), 0u) << s.message();
    EXPECT_NE(s.message().find(rule), std::string::npos) << s.message();
  };
  {
    auto a = p.arguments();
    a.k = 9;
    expect_error(validate(a), "k", "1 .. min(E, 32) = 8");
  }
  {
    auto a = p.arguments();
    a.k = 0;
    expect_error(validate(a), "k", "got 0");
  }
  {
    auto ids64 = HostTensor::contiguous(DType::fp32, {4, 2});
    auto a = p.arguments();
    a.topk_ids = ids64.desc;
    expect_error(validate(a), "topk_ids", "int32");
  }
  {
    auto w = HostTensor::contiguous(DType::fp32, {4, 3});
    auto a = p.arguments();
    a.topk_weights = w.desc;
    expect_error(validate(a), "topk_weights", "(T, k) = (4, 2)");
  }
  {
    auto wide = HostTensor::contiguous(DType::fp32, {2, 1025});
    auto a = p.arguments();
    a.logits = wide.desc;
    expect_error(validate(a), "logits", "1 .. 1024 experts");
  }
  {
    auto i8 = HostTensor::contiguous(DType::i32, {4, 8});
    auto a = p.arguments();
    a.logits = i8.desc;
    expect_error(validate(a), "logits", "bf16, fp16 or fp32");
  }
  {
    auto b = HostTensor::contiguous(DType::fp32, {7});
    auto a = p.arguments();
    a.selection_bias = b.desc;
    expect_error(validate(a), "selection_bias", "(E,) = (8)");
  }
  {
    auto b = HostTensor::contiguous(DType::bf16, {8});
    auto a = p.arguments();
    a.selection_bias = b.desc;
    expect_error(validate(a), "selection_bias", "fp32");
  }
  {
    auto a = p.arguments();
    a.topk_weights = a.topk_ids;  // (same bytes: int32 fails first) -> overlap of two fp32 views
    a.topk_weights.dtype = DType::fp32;
    expect_error(validate(a), "topk_ids", "must not overlap topk_weights");
  }
  {
    auto g = HostTensor::contiguous(DType::fp32, {4, 8});
    auto b = p.backward_arguments();
    b.grad_logits = g.desc;
    expect_error(validate(b), "grad_logits", "logits' dtype (bf16)");
  }
  {
    auto b = p.backward_arguments();
    b.grad_logits = b.logits;
    expect_error(validate(b), "grad_logits", "must not overlap logits");
  }
  {
    auto cuda_ids = p.ids.desc;
    cuda_ids.device = Device::cuda(0);
    auto a = p.arguments();
    a.topk_ids = cuda_ids;
    expect_error(validate(a), "topk_ids", "on logits' device");
  }
}

}  // namespace
}  // namespace gemmops::testing
