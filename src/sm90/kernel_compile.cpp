// src/sm90/kernel_compile.cpp: the NVRTC request of one grouped GEMM kernel
// SPDX-License-Identifier: Apache-2.0
#include "sm90/kernel_compile.hpp"

#include <cstdint>

#include "core/env.hpp"
#include "sm90/kernel_config.hpp"

namespace gemmops::sm90 {

jit::CompileRequest make_compile_request(const std::string& kernel_name, const KernelConfig& c, const Target& target) {
  jit::CompileRequest req;
  req.kernel_name = kernel_name;
  req.source = "#include \"sm90/grouped_gemm.cuh\"\n";
  req.name_expressions = {instantiation_text(c)};
  // The M-grouped forms also get the split-K kernel, in the same cubin: run() takes it for the
  // sizes the estimate splits, and the kernel that does not split carries none of its code. Not
  // with an epilogue op, nor with 192 accumulators a thread: those never split K (plan.cpp).
  if (has_split_k_twin(c)) {
    KernelConfig split = c;
    split.split_k = true;
    req.name_expressions.push_back(instantiation_text(split));
  }
  req.target = target;
  // The consumers' registers are nearly all accumulators: a spill would be a silent slowdown, so
  // ptxas says so in the log (the compile tests fail on it).
  req.options.push_back("--ptxas-options=--warn-on-spills");
  // A debugging build: a barrier wait that spins this long traps, so a deadlock comes back as a
  // launch error instead of a hang (the option is part of the cache key).
  if (auto seconds = env::kernel_watchdog_seconds())
    req.options.push_back("-DGEMMOPS_KERNEL_WATCHDOG_NS=" + std::to_string(int64_t{*seconds} * 1000000000) + "ull");
  // Experiments: a kernel variant chosen by a macro, compiled beside the default in one process.
  for (const std::string& d : env::kernel_defines()) req.options.push_back("-D" + d);
  return req;
}

jit::CompileRequest make_compile_request(const Sm90Design& d, DType ab, DType out, Major b_major,
                                         const EpilogueOps& ops, const Target& target) {
  const KernelConfig c = make_kernel_config(d, ab, out, Major::k, b_major, false, kernel_op(ops));
  return make_compile_request("sm90_grouped_gemm_" + d.design.to_string(), c, target);
}

bool waits_for_programmatic_launch(const jit::CompileRequest& req) {
  for (const std::string& o : req.options)
    if (o == "-DGEMMOPS_PDL" || o.rfind("-DGEMMOPS_PDL=", 0) == 0) return true;
  return false;
}

}  // namespace gemmops::sm90
