// src/sm90/kernel_compile.hpp: the NVRTC request that compiles one grouped GEMM kernel (and its
// split-K twin), shared by the operator and the compile tests
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

#include "gemmops/epilogue.hpp"
#include "gemmops/target.hpp"
#include "jit/compile.hpp"
#include "sm90/designs.hpp"

namespace gemmops::kernels::sm90 {
struct KernelConfig;
}  // namespace gemmops::kernels::sm90

namespace gemmops::sm90 {

/// The request for kernel `c` named `kernel_name` in the cache, for `target`. M-grouped kernels
/// without an epilogue op also get the split-K instantiation, second in name_expressions. Options: spills reported
/// (--warn-on-spills), and the barrier watchdog when GEMMOPS_KERNEL_WATCHDOG is set.
jit::CompileRequest make_compile_request(const std::string& kernel_name, const kernels::sm90::KernelConfig& c,
                                         const Target& target);

/// The request for design `d`'s M-grouped kernel (A K-major) with `ops` fused into its epilogue:
/// what an operator compiles for such arguments, without arguments (the compile tests).
jit::CompileRequest make_compile_request(const Sm90Design& d, DType ab, DType out, Major b_major,
                                         const EpilogueOps& ops, const Target& target);

/// Whether `req`'s kernel waits for programmatic dependent launch (compiled with GEMMOPS_PDL, an A/B
/// define in GEMMOPS_KERNEL_DEFINES), so that its launches may ask for it.
bool waits_for_programmatic_launch(const jit::CompileRequest& req);

}  // namespace gemmops::sm90
