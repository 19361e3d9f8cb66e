// src/simt/provider.cpp: one portable operator per (A/B dtype, out dtype) pair
// SPDX-License-Identifier: Apache-2.0
#include "simt/provider.hpp"

#include <memory>

#include "gemmops/assert.hpp"
#include "simt/grouped_gemm.hpp"

namespace gemmops::simt {

void register_simt_operators(Registry& registry) {
  for (DType ab : {DType::bf16, DType::fp16, DType::fp32}) {
    for (DType out : {DType::bf16, DType::fp16, DType::fp32}) {
      Status s = registry.add(std::make_shared<SimtGemmOperator>(ab, out));
      GEMMOPS_ASSERT(s.is_ok(), "built-in simt operator names are unique");
    }
  }
}

}  // namespace gemmops::simt
