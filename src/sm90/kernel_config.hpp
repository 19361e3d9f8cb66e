// src/sm90/kernel_config.hpp: from a design and operand types to the kernel's KernelConfig and the
// instantiation text NVRTC compiles (named fields, never positional holes)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

#include "gemmops/dtype.hpp"
#include "gemmops/epilogue.hpp"
#include "gemmops/tensor.hpp"
#include "sm90/config.cuh"
#include "sm90/designs.hpp"

namespace gemmops::sm90 {

using kernels::sm90::KernelConfig;

/// The kernel's element type for a (bf16, fp16, fp32, e4m3) dtype.
kernels::sm90::ElemType elem_type(DType t);

/// The kernel's compile-time epilogue op for `ops` with out of type `out` (the bias's dtype is read
/// from its description; its data and the op's values are run-time parameters).
kernels::sm90::EpilogueOp kernel_op(const EpilogueOps& ops);

/// The kernel for `d` on operands of these types and majors; `k_grouped` for the K-grouped form;
/// `op` the fused epilogue op (the identity by default); `gather_a` A's rows (K-grouped: k-rows)
/// read through an index, `gather_b` B's k-rows (K-grouped).
KernelConfig make_kernel_config(const Sm90Design& d, DType ab, DType out, Major a_major, Major b_major,
                                bool k_grouped, kernels::sm90::EpilogueOp op = {}, bool gather_a = false,
                                bool gather_b = false, bool out_m_major = false);

/// Why design `d` cannot gather A's rows (KernelConfig::gather_a) on kernel `c`, or "" when it can.
std::string gather_a_refusal(const KernelConfig& c);

/// Why design `d` cannot gather the K-grouped form's operands along K on kernel `c` (gather_a with
/// an M-major A, gather_b with an N-major B), or "" when it can.
std::string gather_k_refusal(const KernelConfig& c);

/// "gemmops::kernels::sm90::grouped_gemm_kernel<gemmops::kernels::sm90::KernelConfig{.tile_m = 128, ...}>"
std::string instantiation_text(const KernelConfig& c);

/// Whether the kernel has a split-K twin in its cubin: M-grouped (and dense, batched) forms without
/// an epilogue op and without wide accumulators (the fix-up spills beside 192 a thread), and not
/// with a gathered A (its consumers keep 224 registers, and it has not been tried beside the fix-up),
/// and not for fp8 operands (the fp8 main loop has no split-K yet), nor with a cluster along N.
/// Why a design with a cluster along N cannot serve the config's form ("" if it can): the
/// K-grouped form and the fp8 main loop have no such kernels (a gathered A: gather_a_refusal).
std::string cluster_n_refusal(const KernelConfig& c);

inline bool has_split_k_twin(const KernelConfig& c) {
  return c.group_axis == kernels::sm90::GroupAxis::m && c.op.identity() && !c.wide_accumulators() && !c.gathers() &&
         c.ab != kernels::sm90::ElemType::e4m3 && c.cluster_n == 1;
}

}  // namespace gemmops::sm90
