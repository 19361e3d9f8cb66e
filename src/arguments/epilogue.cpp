// src/arguments/epilogue.cpp: the names of the epilogue ops' enums, both ways
// SPDX-License-Identifier: Apache-2.0
#include "gemmops/epilogue.hpp"

namespace gemmops {

std::string_view name(Activation a) {
  switch (a) {
    case Activation::none: return "none";
    case Activation::silu: return "silu";
    case Activation::gelu_tanh: return "gelu_tanh";
    case Activation::relu_squared: return "relu_squared";
    case Activation::swiglu: return "swiglu";
    case Activation::swiglu_oss: return "swiglu_oss";
  }
  return "unknown";
}

std::string_view name(GateLayout g) {
  switch (g) {
    case GateLayout::concatenated: return "concatenated";
    case GateLayout::interleaved: return "interleaved";
  }
  return "unknown";
}

std::optional<Activation> parse_activation(std::string_view text) {
  for (Activation a : kAllActivations)
    if (name(a) == text) return a;
  return std::nullopt;
}

std::optional<GateLayout> parse_gate_layout(std::string_view text) {
  for (GateLayout g : kAllGateLayouts)
    if (name(g) == text) return g;
  return std::nullopt;
}

}  // namespace gemmops
