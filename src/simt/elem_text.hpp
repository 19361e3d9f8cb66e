// src/simt/elem_text.hpp: a float dtype as the portable kernels' element-type template argument
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "gemmops/dtype.hpp"

namespace gemmops::simt {

/// "Elem::bf16", "Elem::fp16" or "Elem::fp32" (kernels/simt/elements.cuh), the text a kernel's name
/// expression takes for `t`; fp32 for any other dtype (callers pass 16- and 32-bit floats only).
inline const char* elem_text(DType t) {
  return t == DType::bf16 ? "Elem::bf16" : t == DType::fp16 ? "Elem::fp16" : "Elem::fp32";
}

}  // namespace gemmops::simt
