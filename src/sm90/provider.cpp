// src/sm90/provider.cpp: one operator per design and (A/B dtype, out dtype) pair
// SPDX-License-Identifier: Apache-2.0
#include "sm90/provider.hpp"

#include <memory>

#include "gemmops/assert.hpp"
#include "sm90/grouped_gemm.hpp"

namespace gemmops::sm90 {

void register_sm90_operators(Registry& registry) {
  for (const Sm90Design& d : sm90_designs()) {
    for (DType ab : {DType::bf16, DType::fp16}) {
      for (DType out : {DType::bf16, DType::fp16, DType::fp32}) {
        // The TMA epilogue stages 16-bit results; fp32 outputs keep the direct store.
        if (d.design.epilogue == Epilogue::tma_store && out == DType::fp32) continue;
        Status s = registry.add(std::make_shared<GroupedGemmOperator>(d, ab, out));
        GEMMOPS_ASSERT(s.is_ok(), "built-in sm90 operator names are unique");
      }
    }
  }
  // The fp8 main loop: e4m3 A and B with block scales, bf16 out (trial designs: offered only with
  // GEMMOPS_TRIAL_DESIGNS=1 until they pass the GPU suite).
  for (const Sm90Design& d : sm90_fp8_designs()) {
    Status s = registry.add(std::make_shared<GroupedGemmOperator>(d, DType::e4m3, DType::bf16));
    GEMMOPS_ASSERT(s.is_ok(), "built-in sm90 operator names are unique");
  }
}

}  // namespace gemmops::sm90
