// src/moe/route_kernels.hpp: what NVRTC compiles for route() (the three routing kernels), for the
// launcher and the compile tests
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "jit/compile.hpp"

namespace gemmops::moe {

/// The count, scan and scatter kernels, in that order; no target (set per architecture).
jit::CompileRequest route_request();

}  // namespace gemmops::moe
