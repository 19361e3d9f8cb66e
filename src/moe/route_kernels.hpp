// src/moe/route_kernels.hpp: what NVRTC compiles for route() (the three routing kernels), for the
// launcher and the compile tests
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "jit/compile.hpp"

namespace gemmops::moe {

/// The count, scan and scatter kernels, in that order, then their wide twins; no target (set per
/// architecture).
jit::CompileRequest route_request();

/// Whether route() on a device takes the wide kernels (chunks of a few hundred pairs, one flat scan)
/// for `pairs` pairs, or the chunked ones (chunks of kChunk, a scan per expert's column).
bool route_uses_wide_kernels(std::int64_t pairs);

}  // namespace gemmops::moe
