// src/moe/router_topk.cpp: router_topk() and its backward on the host (a loop per token) or on a CUDA
// device (kernels/moe/router_topk.cuh, a warp a token, compiled per dtype and row width on first use)
// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "cpu/element_io.hpp"
#include "cuda/launch.hpp"
#include "gemmops/moe.hpp"
#include "moe/moe_device.hpp"
#include "moe/moe_rules.hpp"
#include "moe/router_topk_kernels.hpp"
#include "moe/router_topk_params.cuh"
#include "simt/arch_modules.hpp"
#include "simt/elem_text.hpp"

namespace gemmops {
namespace {

namespace k = kernels::moe;
using simt::elem_text;

/// Token t's softmax in fp32, as the kernel computes it: exp(z - max) times the sum's inverse.
std::vector<float> softmax_row(const TensorDesc& logits, int64_t t) {
  const int64_t experts = logits.size(1);
  std::vector<float> p(static_cast<size_t>(experts));
  float m = -INFINITY;
  for (int64_t e = 0; e < experts; ++e) {
    p[static_cast<size_t>(e)] =
        cpu::load_float(static_cast<const std::byte*>(logits.data), logits.dtype, t * logits.stride(0) + e);
    m = std::max(m, p[static_cast<size_t>(e)]);
  }
  float s = 0.0f;
  for (float& v : p) s += (v = std::exp(v - m));
  const float inv = 1.0f / s;
  for (float& v : p) v *= inv;
  return p;
}

void router_topk_on_host(const RouterTopkArguments& a) {
  const int64_t tokens = a.logits.size(0), experts = a.logits.size(1), kk = a.k;
  auto* ids = static_cast<int32_t*>(a.topk_ids.data);
  auto* weights = static_cast<float*>(a.topk_weights.data);
  std::vector<int32_t> order(static_cast<size_t>(experts));
  for (int64_t t = 0; t < tokens; ++t) {
    const std::vector<float> p = softmax_row(a.logits, t);
    std::vector<float> key = p;
    if (a.selection_bias) {
      const auto* bias = static_cast<const float*>(a.selection_bias->data);
      const int64_t row = a.selection_bias->rank() == 2 ? t * a.selection_bias->stride(0) : 0;
      for (int64_t e = 0; e < experts; ++e) key[static_cast<size_t>(e)] += bias[row + e];
    }
    std::iota(order.begin(), order.end(), 0);
    // Largest key first, the lower id on a tie (NaN keys last).
    std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) {
      const float kx = key[static_cast<size_t>(x)], ky = key[static_cast<size_t>(y)];
      if (std::isnan(ky)) return !std::isnan(kx);
      return kx > ky;
    });
    float sum = 0.0f;
    for (int64_t j = 0; j < kk; ++j) sum += p[static_cast<size_t>(order[static_cast<size_t>(j)])];
    for (int64_t j = 0; j < kk; ++j) {
      const int32_t e = order[static_cast<size_t>(j)];
      ids[t * kk + j] = e;
      weights[t * kk + j] = a.renormalize ? p[static_cast<size_t>(e)] / sum : p[static_cast<size_t>(e)];
    }
  }
}

void router_topk_backward_on_host(const RouterTopkBackwardArguments& a) {
  const int64_t tokens = a.logits.size(0), experts = a.logits.size(1), kk = a.topk_ids.size(1);
  const auto* ids = static_cast<const int32_t*>(a.topk_ids.data);
  const auto* dw = static_cast<const float*>(a.grad_topk_weights.data);
  for (int64_t t = 0; t < tokens; ++t) {
    const std::vector<float> p = softmax_row(a.logits, t);
    std::vector<float> g(static_cast<size_t>(experts), 0.0f);
    std::vector<float> gj(static_cast<size_t>(kk), 0.0f);
    float sum = 0.0f, dot = 0.0f;
    for (int64_t j = 0; j < kk; ++j) {
      const int32_t e = ids[t * kk + j];
      if (e < 0 || e >= experts) continue;
      sum += p[static_cast<size_t>(e)];
      gj[static_cast<size_t>(j)] = dw[t * kk + j];
      dot += dw[t * kk + j] * p[static_cast<size_t>(e)];
    }
    float pg = 0.0f;
    for (int64_t j = 0; j < kk; ++j) {
      const int32_t e = ids[t * kk + j];
      if (e < 0 || e >= experts) continue;
      float& v = gj[static_cast<size_t>(j)];
      if (a.renormalize) v = (v - dot / sum) / sum;
      g[static_cast<size_t>(e)] += v;
      pg += v * p[static_cast<size_t>(e)];
    }
    for (int64_t e = 0; e < experts; ++e) {
      cpu::store_float(static_cast<std::byte*>(a.grad_logits.data), a.grad_logits.dtype, t * a.grad_logits.stride(0) + e,
                       p[static_cast<size_t>(e)] * (g[static_cast<size_t>(e)] - pg));
    }
  }
}

const simt::ArchModules& modules_for(DType logits, int values) {
  static std::mutex mutex;
  static std::map<std::pair<DType, int>, std::unique_ptr<simt::ArchModules>> cache;
  std::lock_guard lock(mutex);
  auto& slot = cache[{logits, values}];
  if (!slot) slot = std::make_unique<simt::ArchModules>(moe::router_topk_request(logits, values));
  return *slot;
}

/// One of the two kernels (0 forward, 1 backward) over `tokens`, a warp a token.
Status launch(const TensorDesc& logits, size_t which, k::RouterTopkParams& p, Stream stream) {
  const int ordinal = logits.device.index;
  GEMMOPS_ASSIGN_OR_RETURN(const moe::MoeDevice device,
                           moe::moe_device(ordinal, "logits", which == 0 ? "router_topk" : "router_topk_backward"));
  GEMMOPS_ASSIGN_OR_RETURN(std::shared_ptr<const simt::ArchModule> arch,
                           modules_for(logits.dtype, moe::router_values_per_lane(p.experts)).for_cc(device.facts.cc));
  GEMMOPS_ASSIGN_OR_RETURN(CUfunction fn, arch->module.function(ordinal, arch->compiled->lowered_names.at(which)));
  cuda::LaunchConfig lc;
  // Up to 16 blocks an SM; further tokens are taken grid-strided.
  const int64_t blocks = (int64_t{p.tokens} + k::kRouterWarps - 1) / k::kRouterWarps;
  lc.grid[0] = static_cast<unsigned>(std::min<int64_t>(blocks, int64_t{device.facts.sm_count} * 16));
  lc.block[0] = 32u * k::kRouterWarps;
  lc.stream = static_cast<CUstream>(stream);
  void* params[] = {&p};
  return cuda::launch(*device.api, fn, lc, params);
}

}  // namespace

namespace moe {

int router_values_per_lane(int experts) {
  int v = 1;
  while (32 * v < experts) v *= 2;
  return v;
}

jit::CompileRequest router_topk_request(DType logits, int values) {
  jit::CompileRequest req;
  req.kernel_name = "moe_router_topk";
  req.source = "#include \"moe/router_topk.cuh\"\n";
  const std::string ns = "gemmops::kernels::moe::";
  const std::string args = "<" + ns + elem_text(logits) + ", " + std::to_string(values) + ">";
  req.name_expressions = {ns + "router_topk_kernel" + args, ns + "router_topk_backward_kernel" + args};
  req.options.push_back("--ptxas-options=--warn-on-spills");
  return req;
}

}  // namespace moe

Status router_topk(const RouterTopkArguments& a, Stream stream) {
  GEMMOPS_TRY(validate(a));
  GEMMOPS_TRY(moe::refuse_fakes({{&a.logits, "logits"}, {&a.topk_ids, "topk_ids"}, {&a.topk_weights, "topk_weights"},
                           {a.selection_bias ? &*a.selection_bias : nullptr, "selection_bias"}}));
  if (a.logits.size(0) == 0) return Status::ok();
  if (!a.logits.device.is_cuda()) {
    router_topk_on_host(a);
    return Status::ok();
  }
  k::RouterTopkParams p{};
  p.logits = a.logits.data;
  p.bias = a.selection_bias ? static_cast<const float*>(a.selection_bias->data) : nullptr;
  p.bias_stride = a.selection_bias && a.selection_bias->rank() == 2 && a.selection_bias->size(0) > 1
                      ? a.selection_bias->stride(0) : 0;
  p.ids = static_cast<int*>(a.topk_ids.data);
  p.weights = static_cast<float*>(a.topk_weights.data);
  p.logits_stride = a.logits.size(0) > 1 ? a.logits.stride(0) : 0;
  p.tokens = static_cast<int>(a.logits.size(0));
  p.experts = static_cast<int>(a.logits.size(1));
  p.k = a.k;
  p.renormalize = a.renormalize ? 1 : 0;
  return launch(a.logits, 0, p, stream);
}

Status router_topk_backward(const RouterTopkBackwardArguments& a, Stream stream) {
  GEMMOPS_TRY(validate(a));
  GEMMOPS_TRY(moe::refuse_fakes({{&a.logits, "logits"}, {&a.topk_ids, "topk_ids"},
                           {&a.grad_topk_weights, "grad_topk_weights"}, {&a.grad_logits, "grad_logits"}}));
  if (a.logits.size(0) == 0) return Status::ok();
  if (!a.logits.device.is_cuda()) {
    router_topk_backward_on_host(a);
    return Status::ok();
  }
  k::RouterTopkParams p{};
  p.logits = a.logits.data;
  p.ids = static_cast<int*>(a.topk_ids.data);
  p.grad_weights = static_cast<const float*>(a.grad_topk_weights.data);
  p.grad_logits = a.grad_logits.data;
  p.logits_stride = a.logits.size(0) > 1 ? a.logits.stride(0) : 0;
  p.grad_stride = a.grad_logits.size(0) > 1 ? a.grad_logits.stride(0) : 0;
  p.tokens = static_cast<int>(a.logits.size(0));
  p.experts = static_cast<int>(a.logits.size(1));
  p.k = static_cast<int>(a.topk_ids.size(1));
  p.renormalize = a.renormalize ? 1 : 0;
  return launch(a.logits, 1, p, stream);
}

}  // namespace gemmops
