// src/cpu/epilogue.hpp: the epilogue ops (bias, activation, row scale) on rows of an fp32 product
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu/pack.hpp"
#include "gemmops/epilogue.hpp"

namespace gemmops::cpu {

/// A block of rows of the product and where their results go.
struct EpilogueRows {
  const float* acc = nullptr;  ///< rows x n, leading dimension `ld`
  int64_t ld = 0;
  int64_t rows = 0, n = 0;  ///< n: the product's columns (2I with a gated activation)
  OutRef out;               ///< at the block's first row; n columns, or n / 2 gated
  const std::byte* bias = nullptr;  ///< n contiguous values of bias_dtype (fp32, bf16, fp16); null: none
  DType bias_dtype = DType::fp32;
  const float* row_scale = nullptr;  ///< rows contiguous values; null: none
  OutRef pre_activation;             ///< EpilogueOps::pre_activation at the first row (n columns)
  // EpilogueOps::activation_grad: h at the first row (2n columns of h_dtype, rows h_row_stride
  // elements apart), s act(h) (n columns) and the 64-column partials.
  const std::byte* h = nullptr;
  DType h_dtype = DType::bf16;
  int64_t h_row_stride = 0;
  OutRef scaled_activation, score_grad_partials;
};

/// out = convert(activation(acc + bias) * row_scale), all in fp32, as epilogue.hpp defines it
/// (the gated activations pair columns by ops.gate_layout), and pre_activation = acc + bias; or,
/// with ops.activation_grad, the gated activation's backward (activation_grad.hpp).
void apply_epilogue(const EpilogueOps& ops, const EpilogueRows& rows);

}  // namespace gemmops::cpu
