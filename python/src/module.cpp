// python/src/module.cpp: the _gemmops extension module; each bind_* file adds one concept
// SPDX-License-Identifier: Apache-2.0
#include "bindings.hpp"

NB_MODULE(_gemmops, m) {
  using namespace gemmops::python;
  m.doc() = "gemmops: fast GEMM and grouped-GEMM operators (C++ core; see the gemmops package)";
  m.attr("__version__") = gemmops::kVersion;
  bind_errors(m);     // Status
  bind_tensor(m);     // TensorSpec
  bind_epilogue(m);   // EpilogueOps, activations, gate_layouts
  bind_scaling(m);    // OperandScales, quantize_fp8, scale_shape
  bind_moe(m);        // gather_reduce
  bind_arguments(m);  // GemmArguments, GroupedGemmArguments
  bind_operator(m);   // Operator, Artifact
  bind_registry(m);   // get_operators, register_operator, device_supports, ...
  bind_plan(m);       // Plan, make_plan
  bind_autotune(m);   // autotune
  release_python_operators_at_exit();
}
