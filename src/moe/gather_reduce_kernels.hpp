// src/moe/gather_reduce_kernels.hpp: what NVRTC compiles for gather_reduce (one request per element
// types and vector width), for the launcher and the compile tests
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "gemmops/dtype.hpp"
#include "jit/compile.hpp"

namespace gemmops::moe {

/// The kernels of rows dtype `in`, out dtype `out` and `vec` elements a thread-step (1, or 16 bytes
/// of `in`), without and with scores, in that order; no target (set per architecture).
jit::CompileRequest gather_reduce_request(DType in, DType out, int vec);

}  // namespace gemmops::moe
