// src/cpu/activation_grad.hpp: the gated activations' value and partial derivatives, and the fused
// backward (EpilogueOps::activation_grad) on rows of an fp32 product dA
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cpu/epilogue.hpp"

namespace gemmops::cpu {

/// act(gate, up) and its partial derivatives, in fp32 (epilogue.hpp's definitions; swiglu_oss's
/// clamps pass the gradient at their bounds, as torch's clamp does).
struct GatedValue {
  float act, d_gate, d_up;
};
GatedValue gated_with_derivatives(const EpilogueOps& ops, float gate, float up);

/// act(x) and act'(x) of a plain activation, in fp32.
struct PlainValue {
  float act, d;
};
PlainValue plain_with_derivative(Activation a, float x);

/// dh (into rows.out: 2n columns in ops.gate_layout when gated, else n), s act(h) and the 64-column
/// partials of dA act(h), as ActivationGrad defines them; rows.acc is dA (n columns), rows.row_scale s.
void apply_activation_grad(const EpilogueOps& ops, const EpilogueRows& rows);

/// apply_activation_grad for the plain activations: h, dh and s act(h) have the product's n columns.
void apply_plain_grad(const EpilogueOps& ops, const EpilogueRows& rows);

/// Zeros into every output of the second operands at one row (the zero tail's rows).
void zero_second_outputs(const EpilogueOps& ops, const EpilogueRows& row);

}  // namespace gemmops::cpu
