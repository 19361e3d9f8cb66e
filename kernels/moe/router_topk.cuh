// kernels/moe/router_topk.cuh: a MoE router's softmax and top-k in one kernel, a warp a token, and its
// backward (arch-neutral, sm_80 and later): one read of the logits, no sort, no host synchronisation
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "moe/router_topk_params.cuh"
#include "simt/elements.cuh"

namespace gemmops::kernels::moe {

using simt::Elem;

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/// The token's softmax into `p` (this lane's experts lane + 32 v; 0 past the last expert), and the
/// whole row into the warp's shared `row` (experts floats).
template <Elem kElem, int kV>
__device__ __forceinline__ void softmax_row(const RouterTopkParams& p, int token, int lane, float (&prob)[kV],
                                            float* row) {
  const int64_t first = static_cast<int64_t>(token) * p.logits_stride;  // the row's first element
  float z[kV];
  float m = -__int_as_float(0x7f800000);
#pragma unroll
  for (int v = 0; v < kV; ++v) {
    const int e = lane + 32 * v;
    z[v] = e < p.experts ? simt::load_element<kElem>(p.logits, first + e) : -__int_as_float(0x7f800000);
    m = fmaxf(m, z[v]);
  }
  m = warp_max(m);
  float s = 0.0f;
#pragma unroll
  for (int v = 0; v < kV; ++v) {
    const int e = lane + 32 * v;
    prob[v] = e < p.experts ? expf(z[v] - m) : 0.0f;
    s += prob[v];
  }
  const float inv = 1.0f / warp_sum(s);
#pragma unroll
  for (int v = 0; v < kV; ++v) {
    const int e = lane + 32 * v;
    prob[v] *= inv;
    if (e < p.experts) row[e] = prob[v];
  }
  __syncwarp();
}

/// Forward: ids and weights of each token's k choices. kV: values a lane (experts <= 32 kV).
template <Elem kElem, int kV>
__global__ void __launch_bounds__(32 * kRouterWarps) router_topk_kernel(const RouterTopkParams p) {
  __shared__ float rows[kRouterWarps][32 * kV];
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  for (int token = static_cast<int>(blockIdx.x) * kRouterWarps + warp; token < p.tokens;
       token += static_cast<int>(gridDim.x) * kRouterWarps) {
    float prob[kV];
    softmax_row<kElem, kV>(p, token, lane, prob, rows[warp]);
    // Selection keys: p + bias; past the last expert never chosen. Taken keys become -inf and are
    // skipped by the `taken` bits (so a row of -inf keys still yields k distinct experts).
    float key[kV];
    unsigned taken = 0;
    const float* bias = p.bias ? p.bias + static_cast<int64_t>(token) * p.bias_stride : nullptr;
#pragma unroll
    for (int v = 0; v < kV; ++v) {
      const int e = lane + 32 * v;
      key[v] = prob[v] + (bias != nullptr && e < p.experts ? __ldg(bias + e) : 0.0f);
      if (e >= p.experts) taken |= 1u << v;
    }
    int my_id = -1;
    float my_weight = 0.0f;
    for (int j = 0; j < p.k; ++j) {
      float best = -__int_as_float(0x7f800000);
      int best_e = 0x7fffffff;
#pragma unroll
      for (int v = 0; v < kV; ++v) {  // ascending experts: ">" keeps the lower id on a tie
        const int e = lane + 32 * v;
        if (!(taken >> v & 1u) && (key[v] > best || best_e == 0x7fffffff)) best = key[v], best_e = e;
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        const float other = __shfl_xor_sync(0xffffffffu, best, o);
        const int other_e = __shfl_xor_sync(0xffffffffu, best_e, o);
        if (other > best || (other == best && other_e < best_e) || (best_e == 0x7fffffff && other_e != 0x7fffffff))
          best = other, best_e = other_e;
      }
      if (best_e % 32 == lane) taken |= 1u << (best_e / 32);
      if (lane == j) my_id = best_e, my_weight = rows[warp][best_e];
    }
    if (p.renormalize) my_weight /= warp_sum(lane < p.k ? my_weight : 0.0f);
    if (lane < p.k) {
      p.ids[static_cast<int64_t>(token) * p.k + lane] = my_id;
      p.weights[static_cast<int64_t>(token) * p.k + lane] = my_weight;
    }
    __syncwarp();  // the row's shared memory is rewritten by the next token
  }
}

/// Backward: grad_logits = p * (g - sum(p g)), g the gradient at p of the weights (scattered to the
/// chosen experts; with renormalize, through the division by their sum). Ids outside [0, experts)
/// (sentinels) have no gradient.
template <Elem kElem, int kV>
__global__ void __launch_bounds__(32 * kRouterWarps) router_topk_backward_kernel(const RouterTopkParams p) {
  __shared__ float rows[kRouterWarps][32 * kV];
  __shared__ float grads[kRouterWarps][32 * kV];
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  for (int token = static_cast<int>(blockIdx.x) * kRouterWarps + warp; token < p.tokens;
       token += static_cast<int>(gridDim.x) * kRouterWarps) {
    float prob[kV];
    softmax_row<kElem, kV>(p, token, lane, prob, rows[warp]);
#pragma unroll
    for (int v = 0; v < kV; ++v) grads[warp][lane + 32 * v] = 0.0f;
    __syncwarp();  // every lane's zeros before lane 0 adds into them (a shuffle orders no shared memory)
    const int64_t at = static_cast<int64_t>(token) * p.k + lane;
    const int id = lane < p.k ? __ldg(p.ids + at) : -1;
    const bool live = id >= 0 && id < p.experts;
    const float pw = live ? rows[warp][id] : 0.0f;
    float g = lane < p.k && live ? __ldg(p.grad_weights + at) : 0.0f;
    if (p.renormalize) {  // w = p / S: dp = (dw - sum(dw w)) / S
      const float sum = warp_sum(pw);
      const float dot = warp_sum(g * pw) / sum;
      g = live ? (g - dot) / sum : 0.0f;
    }
    // Each choice's gradient at its expert, added in choice order by lane 0 (a repeated id sums its
    // choices', deterministically); k is the same for the whole warp, so every lane shuffles.
    for (int j = 0; j < p.k; ++j) {
      const float gv = __shfl_sync(0xffffffffu, g, j);
      const int ev = __shfl_sync(0xffffffffu, live ? id : -1, j);
      if (lane == 0 && ev >= 0) grads[warp][ev] += gv;
    }
    const float pg = warp_sum(g * pw);  // sum over experts of p g (g is zero off the chosen ones)
    __syncwarp();
    const int64_t out_first = static_cast<int64_t>(token) * p.grad_stride;
#pragma unroll
    for (int v = 0; v < kV; ++v) {
      const int e = lane + 32 * v;
      if (e < p.experts) simt::store_element<kElem>(p.grad_logits, out_first + e, prob[v] * (grads[warp][e] - pg));
    }
    __syncwarp();
  }
}

}  // namespace gemmops::kernels::moe
