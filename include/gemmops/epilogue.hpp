// include/gemmops/epilogue.hpp: what the epilogue computes from the accumulators before they are stored
// (a meaning, not a mechanism: how the bytes leave is an operator's design, see metadata.hpp)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "gemmops/tensor.hpp"

namespace gemmops {

/// The activation applied to each fp32 accumulator (after the bias, before the row scale).
/// Gated activations pair a gate column with an up column of the GEMM's N = 2I and write I
/// columns: out has half the columns of the product (see GateLayout).
enum class Activation : int {
  none = 0,
  silu,          ///< x * sigmoid(x)
  gelu_tanh,     ///< 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  relu_squared,  ///< max(x, 0)^2
  swiglu,        ///< gated: silu(gate) * up
  /// gated, gpt-oss: g = min(gate, limit), u = clamp(up, -limit, limit), out = (u + 1) * g * sigmoid(alpha g)
  swiglu_oss,
};
inline constexpr Activation kAllActivations[] = {Activation::none, Activation::silu, Activation::gelu_tanh,
                                                 Activation::relu_squared, Activation::swiglu,
                                                 Activation::swiglu_oss};
/// "none", "silu", "gelu_tanh", "relu_squared", "swiglu", "swiglu_oss".
std::string_view name(Activation a);
/// The activation named `text` (one of name()'s answers); nullopt otherwise.
std::optional<Activation> parse_activation(std::string_view text);
constexpr bool is_gated(Activation a) { return a == Activation::swiglu || a == Activation::swiglu_oss; }

/// Where a gated activation finds its halves among the product's 2I columns.
enum class GateLayout : int {
  concatenated = 0,  ///< gate = columns [0, I), up = columns [I, 2I)
  interleaved,       ///< gate = even columns, up = odd columns (gpt-oss's checkpoints)
};
inline constexpr GateLayout kAllGateLayouts[] = {GateLayout::concatenated, GateLayout::interleaved};
/// "concatenated", "interleaved".
std::string_view name(GateLayout g);
/// The gate layout named `text` (one of name()'s answers); nullopt otherwise.
std::optional<GateLayout> parse_gate_layout(std::string_view text);

/// Product columns each score-gradient partial sums (ActivationGrad::score_grad_partials).
inline constexpr int64_t kScoreGradChunk = 64;
/// Columns of the score-gradient partials for a product of `i` columns: ceil(i / 64). The same for
/// every operator and design, so a caller sizes the buffer before choosing one.
constexpr int64_t score_grad_chunks(int64_t i) { return i / kScoreGradChunk + (i % kScoreGradChunk != 0); }

/// The backward of an activation (the MoE down projection's dgrad, "dgated"), fused into the
/// epilogue of dA = dout x W2^T: the product has I columns, and with the saved pre-activation h and
/// the per-row score s (row_scale; 1 without), row r and product column c give, for a gated
/// activation (h = (gate | up), 2I columns in EpilogueOps::gate_layout)
///   out[r, gate(c)] = s[r] dA[r, c] d act / d gate,  out[r, up(c)] = s[r] dA[r, c] d act / d up
///   (out = dh, 2I columns: concatenated c and I + c, interleaved 2c and 2c + 1)
/// and for a plain one (h: I columns) out[r, c] = s[r] dA[r, c] act'(h[r, c]) (out = dh, I columns);
///   scaled_activation[r, c] = s[r] act(h)[r, c]                       (a' for dW2)
///   score_grad_partials[r, j] = sum over c in [64 j, 64 j + 64) of dA[r, c] act(h)[r, c]
/// all in fp32 from the product before rounding; ds[r] = the sum of row r's partials (summed by the
/// caller, in column order for bits that do not depend on the operator). M-grouped only; rows past
/// offsets[G-1] are written only with zero_tail (zeros), like out.
struct ActivationGrad {
  /// h: input, (TotalM, 2I) gated or (TotalM, I) plain, out's dtype, last dimension contiguous
  TensorDesc pre_activation;
  TensorDesc scaled_activation;    ///< a' = s act(h): output, (TotalM, I), out's dtype, last dimension contiguous
  TensorDesc score_grad_partials;  ///< output, (TotalM, score_grad_chunks(I)), fp32, last dimension contiguous
};

/// The epilogue of an M-grouped, dense or batched GEMM. With every field at its default the product
/// is stored as it is. Otherwise, per element of the product (row r of group g, column c):
///   v = acc[r, c] + bias[g, c]            (bias present)
///   v = activation(v)                     (gated: v = act(gate, up), the column count halves)
///   out[r, c'] = convert(v * row_scale[r]) (row_scale present)
/// all in fp32. The K- and N-grouped forms take no epilogue ops.
struct EpilogueOps {
  Activation activation = Activation::none;
  GateLayout gate_layout = GateLayout::concatenated;
  /// swiglu_oss: the sigmoid's slope, finite. A per-call value: not part of a layout's signature.
  float alpha = 1.702f;
  /// swiglu_oss: the clamp of gate (above) and up (both sides), finite and > 0. Per call, like alpha.
  float limit = 7.0f;
  /// Per-group bias over the product's N columns (2I when gated), fp32 or out's dtype, on out's
  /// device, last dimension contiguous: (G, N) M-grouped (masked too), (N,) dense, (L, N) batched.
  std::optional<TensorDesc> bias;
  /// Per-row scale, fp32, contiguous, on out's device: (TotalM,) M-grouped (rows past
  /// offsets[G-1] included), (G, MaxM) masked, (M,) dense, (L, M) batched. MoE routing weights are one.
  std::optional<TensorDesc> row_scale;

  /// A second output (M-grouped only; an activation required): the pre-activation v = acc + bias
  /// before the activation, (TotalM, N) over the product's N (2I when gated), out's dtype, last
  /// dimension contiguous. The backward (ActivationGrad) reads it back.
  std::optional<TensorDesc> pre_activation;
  /// The activation's backward in place of the forward (M-grouped only; an activation, no bias, no
  /// pre_activation): out is dh (twice the product's columns when gated), row_scale the score s.
  std::optional<ActivationGrad> activation_grad;

  /// True when the product is stored as it is.
  bool empty() const {
    return activation == Activation::none && !bias && !row_scale && !pre_activation && !activation_grad;
  }
};

}  // namespace gemmops
