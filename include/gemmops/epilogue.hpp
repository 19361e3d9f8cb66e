// include/gemmops/epilogue.hpp: what the epilogue computes from the accumulators before they are stored
// (a meaning, not a mechanism: how the bytes leave is an operator's design, see metadata.hpp)
// SPDX-License-Identifier: Apache-2.0
#pragma once

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

  /// True when the product is stored as it is.
  bool empty() const { return activation == Activation::none && !bias && !row_scale; }
};

}  // namespace gemmops
