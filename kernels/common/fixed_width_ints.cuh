// kernels/common/fixed_width_ints.cuh: int32_t and int64_t for the parameter headers the host and the
// device share verbatim: the toolkit's under NVRTC (no <cstdint> there), the standard ones otherwise
// SPDX-License-Identifier: Apache-2.0
#pragma once

#ifdef __CUDACC_RTC__
#include <cuda/std/cstdint>
namespace gemmops::kernels {
using int32_t = ::cuda::std::int32_t;
using int64_t = ::cuda::std::int64_t;
}  // namespace gemmops::kernels
#else
#include <cstdint>
#endif
