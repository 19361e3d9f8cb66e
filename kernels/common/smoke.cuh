// kernels/common/smoke.cuh: the smallest kernels, to prove the embed table and the NVRTC path work
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

namespace gemmops::kernels::common {

/// out[i] = in[i] * kScale for i < n; a template so that name expressions are exercised.
template <int kScale>
__global__ void smoke_scale_kernel(float* out, const float* in, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = in[i] * static_cast<float>(kScale);
}

}  // namespace gemmops::kernels::common

/// out[i] = value for i < n; extern "C" so that its name needs no lowering.
extern "C" __global__ void gemmops_smoke_fill(cuda::std::uint32_t* out, cuda::std::uint32_t value, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = value;
}
