// src/sm90/epilogue_support.cpp: the fused epilogue ops of the Hopper designs
// SPDX-License-Identifier: Apache-2.0
#include "sm90/epilogue_support.hpp"

#include <cstdint>

#include "sm90/grouped_gemm.hpp"
#include "sm90/kernel_config.hpp"

namespace gemmops::sm90 {
namespace {

// A gated op stores half of the tile's columns: the TMA store writes them in 64-column boxes, so
// its tiles split into halves of a multiple of 64 columns; the direct store writes 32 columns at a
// time, so a 192-wide tile's 96-column halves serve too (a K-major B: an N-major B's halves load as
// whole 64-wide atoms, check_epilogue).
bool splits_into_halves(const Sm90Design& d) {
  return d.design.tile_n % 128 == 0 || (d.design.tile_n % 64 == 0 && d.design.epilogue != Epilogue::tma_store);
}

// The halves of a concatenated gated op with an N-major B load as whole 64-wide atoms.
bool halves_are_whole_atoms(const Sm90Design& d) { return d.design.tile_n % 128 == 0; }

// A consumer thread of a 128x192 ping-pong tile holds 192 fp32 accumulators of its 240 registers;
// with the TMA store's staging on top, any op's registers spill (the compile tests), while the
// direct store leaves room for them.
int accumulators(const Sm90Design& d) {
  const int rows = d.design.schedule == Schedule::pingpong ? d.design.tile_m : d.design.tile_m / d.consumers;
  return rows * d.design.tile_n / 128;
}

bool op_registers_fit(const Sm90Design& d) { return accumulators(d) <= 128 || d.design.epilogue != Epilogue::tma_store; }

// The activation's backward reads h and writes three outputs per accumulator pair: beside 192
// accumulators a thread it spilled (~160 bytes on the 128x192 ping-pong, ~3 KB on 192x128).
bool activation_grad_fits(const Sm90Design& d) { return accumulators(d) <= 128; }

std::string design_name(const Sm90Design& d) { return d.design.to_string(); }

// The direct store writes the second operands by each thread's own column pairs
// (epilogue_outputs.cuh). The TMA store stages them through its ring (epilogue_tma.cuh): the
// forward's pre-activation passed the GPU suite and runs the MoE up projection 1.09-1.13x faster
// than the direct store's best (H100, 2026-12-07); the backward, below.
bool stores_directly(const Sm90Design& d) { return d.design.epilogue != Epilogue::tma_store; }

// The TMA store's backward (h loaded by TMA into the staging ring) passed the GPU suite on every TMA
// design that serves it (H100, bench/NOTES.md v31). It is offered where it was timed ahead: the 1-CTA
// 128x128 ping-pong ran Qwen3-30B-A3B's dgated piece in 600.6 us against the direct-store pick's
// 711.4. The ranking does not pick it yet (its estimate has no term for the direct store's h round
// trips), GEMMOPS_AUTOTUNE times it. The other TMA designs stay trials: the H100 estimate would make
// the 3-stage 2-CTA 128x256 one the dgated pick of four layer configurations where it was never timed
// with h by TMA (on Qwen3 it ran level with the pick; Mixtral's, with h loaded per thread, 0.92x).
bool offers_tma_activation_grad(const Sm90Design& d) {
  return d.design.epilogue == Epilogue::tma_store && d.design.schedule == Schedule::pingpong &&
         d.design.tile_m == 128 && d.design.tile_n == 128 && d.design.cluster_m == 1 && d.design.cluster_n == 1;
}

// The TMA store stages a chunk's three boxes of the activation's backward together (dh's two and
// s act(h)'s; KernelConfig::epilogue_ring): a design serves it where its ring, so enlarged, still
// leaves room for the scheduler's table of 256 groups. (Excludes the 4-stage 128x256 designs with
// a two-box ring.)
bool ring_takes_activation_grad(const Sm90Design& d) {
  if (stores_directly(d)) return true;
  kernels::sm90::EpilogueOp op;
  op.act = kernels::sm90::Act::swiglu;
  op.activation_grad = true;
  const KernelConfig c = make_kernel_config(d, DType::bf16, DType::bf16, Major::k, Major::k, false, op);
  return c.smem_bytes(256) <= kSm90SmemBudget;
}

// The kernel reads and writes the second operands in pairs (interleaved h and dh: fours) of
// columns: N a multiple of 8, rows 16-byte aligned, so that every access is aligned. The
// score-gradient partials are written one fp32 at a time.
Status check_second_operand(const TensorDesc& t, const char* role) {
  const auto bytes = static_cast<int64_t>(size_of(t.dtype));
  const bool rows_aligned = t.numel() == 0 || t.size(0) <= 1 || t.stride(0) * bytes % 16 == 0;
  if (reinterpret_cast<uintptr_t>(t.data) % 16 != 0 || !rows_aligned)
    return unsupported(std::string(role) + ": sm90 kernels need its data 16-byte aligned and its row stride a multiple "
                       "of 16 bytes; got " + t.describe());
  return Status::ok();
}

Status check_second_operands(const KernelProblem& p, const EpilogueOps& ops) {
  if (!ops.pre_activation && !ops.activation_grad) return Status::ok();
  if (p.n % 8 != 0)
    return unsupported("B: sm90 kernels store the epilogue's second operands in column pairs on 16-byte rows: B's N "
                       "must be a multiple of 8; got N " + std::to_string(p.n));
  if (ops.pre_activation) GEMMOPS_TRY(check_second_operand(*ops.pre_activation, "epilogue.pre_activation"));
  if (const auto& g = ops.activation_grad) {
    GEMMOPS_TRY(check_second_operand(g->pre_activation, "epilogue.activation_grad.pre_activation"));
    GEMMOPS_TRY(check_second_operand(g->scaled_activation, "epilogue.activation_grad.scaled_activation"));
    // (the partials are written one fp32 at a time: any row stride)
  }
  return Status::ok();
}

}  // namespace

Sm90EpilogueSupport epilogue_support(const Sm90Design& d, DType out) {
  Sm90EpilogueSupport s;
  if (!op_registers_fit(d)) {  // the identity only
    s.activations = {Activation::none};
    s.row_scale = false;
    return s;
  }
  s.kinds = {OperationKind::grouped_m, OperationKind::gemm, OperationKind::batched_gemm};
  for (Activation a : kAllActivations)
    if (!is_gated(a) || splits_into_halves(d)) s.activations.push_back(a);
  s.gate_layouts = {GateLayout::concatenated, GateLayout::interleaved};
  s.bias_dtypes = {DType::fp32};
  if (out != DType::fp32) s.bias_dtypes.push_back(out);
  s.row_scale = true;
  s.pre_activation = true;
  s.trial_activation_grad = !stores_directly(d) && !offers_tma_activation_grad(d);  // the TMA store's backward
  s.activation_grad = halves_are_whole_atoms(d) && activation_grad_fits(d) && ring_takes_activation_grad(d);
  return s;
}

std::string check_design_epilogue(const Sm90Design& d, const EpilogueOps& ops) {
  if (!ops.empty() && !op_registers_fit(d))
    return "epilogue: design " + design_name(d) + " serves no epilogue ops (192 fp32 accumulators a thread beside "
           "the TMA store's staging leave no registers for them); its direct-store twins do";
  if (ops.activation_grad && !ring_takes_activation_grad(d))
    return "epilogue: design " + design_name(d) + " stages activation_grad's three outputs of 64 columns together, "
           "and its TMA store's ring so enlarged leaves no shared memory; its direct-store twins serve it";
  // (spill-free on the 128- and 256-wide tiles; on the 192-wide ping-pong, 192 accumulators a thread,
  // the plain activations' backward spilled ~160 bytes, and the gated ones' metadata follows the forward's)
  if (ops.activation_grad && !activation_grad_fits(d))
    return "epilogue: activation_grad is served by designs of at most 128 accumulators a thread; design " +
           design_name(d) + " holds " + std::to_string(accumulators(d));
  if (ops.activation_grad && !halves_are_whole_atoms(d))
    return "epilogue: activation_grad is served on tiles 128 or 256 wide; design " + design_name(d) + " has " +
           std::to_string(d.design.tile_n);
  if (is_gated(ops.activation) && !splits_into_halves(d))
    return "epilogue: " + std::string(name(ops.activation)) + " needs a tile width of 128 or 256, or 192 with the "
           "direct store (its output tile, half the product's, is stored in 64-column boxes by TMA); design " +
           design_name(d) + " has " + std::to_string(d.design.tile_n);
  return "";
}

Status check_epilogue(const KernelProblem& p, const EpilogueOps& ops, const Sm90Design& d, DType out) {
  if (ops.empty()) return Status::ok();
  if (p.kind == OperationKind::grouped_k || p.kind == OperationKind::grouped_n)
    return unsupported("epilogue: the K- and N-grouped forms take no epilogue ops; got activation " +
                       std::string(name(ops.activation)) + (ops.bias ? ", a bias" : "") +
                       (ops.row_scale ? ", a row scale" : ""));
  if (std::string why = check_design_epilogue(d, ops); !why.empty()) return unsupported(why);
  GEMMOPS_TRY(check_second_operands(p, ops));
  if (ops.pre_activation && d.design.epilogue == Epilogue::tma_store && is_gated(ops.activation) &&
      ops.gate_layout == GateLayout::concatenated && (p.n / 2) % 8 != 0)
    return unsupported("epilogue.pre_activation: design " + design_name(d) + " stores h's gate and up halves by "
                       "TMA as two planes I = N / 2 columns apart, whose stride must be a multiple of 16 bytes: I a "
                       "multiple of 8; got N " + std::to_string(p.n) + " (its direct-store twins serve it)");
  if (ops.bias && ops.bias->dtype != DType::fp32 && ops.bias->dtype != out)
    return unsupported("bias: sm90 kernels read a bias of fp32 or out's dtype (" + std::string(name(out)) + "); got " +
                       ops.bias->describe());
  if (ops.bias && ops.bias->rank() > 0 && ops.bias->strides[ops.bias->rank() - 1] != 1 && p.n > 1)
    return unsupported("bias: sm90 kernels need the bias's last dimension contiguous; got " + ops.bias->describe());
  if (ops.row_scale && ops.row_scale->dtype != DType::fp32)
    return unsupported("row_scale: sm90 kernels read an fp32 row scale; got " + ops.row_scale->describe());
  if (is_gated(ops.activation) && !ops.activation_grad) {
    if (ops.gate_layout == GateLayout::concatenated && p.b_major == Major::mn && !halves_are_whole_atoms(d))
      return unsupported("B: design " + design_name(d) + " loads an N-major B's gate and up halves (" +
                         std::to_string(d.design.tile_n / 2) + " columns each) as whole 64-wide atoms, which they "
                         "are not (a K-major B, the interleaved layout or a 128- or 256-wide design serve)");
    if (p.n % 2 != 0)
      return unsupported("B: a gated activation pairs N = 2I columns; got N " + std::to_string(p.n));
    // The up half of an N-major B starts at column I of its contiguous dimension: TMA starts there
    // only on 16-byte boundaries.
    const int64_t align = 16 / static_cast<int64_t>(size_of(p.b->dtype));
    if (ops.gate_layout == GateLayout::concatenated && p.b_major == Major::mn && (p.n / 2) % align != 0)
      return unsupported("B: sm90 kernels load the up half of an N-major B at column I, which TMA needs a multiple "
                         "of " + std::to_string(align) + "; got I " + std::to_string(p.n / 2) +
                         " (a K-major B or the interleaved layout has no such rule)");
  }
  return Status::ok();
}

}  // namespace gemmops::sm90
