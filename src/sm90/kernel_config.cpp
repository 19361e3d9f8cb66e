// src/sm90/kernel_config.cpp: KernelConfig and its instantiation text
// SPDX-License-Identifier: Apache-2.0
#include "sm90/kernel_config.hpp"

#include "gemmops/assert.hpp"

namespace gemmops::sm90 {

kernels::sm90::ElemType elem_type(DType t) {
  switch (t) {
    case DType::bf16: return kernels::sm90::ElemType::bf16;
    case DType::fp16: return kernels::sm90::ElemType::fp16;
    case DType::fp32: return kernels::sm90::ElemType::fp32;
    case DType::e4m3: return kernels::sm90::ElemType::e4m3;  // A and B of the fp8 main loop
    default: break;
  }
  GEMMOPS_ASSERT(false, "sm90 kernels take bf16, fp16, fp32 or e4m3 only; supports() refuses the rest");
}

kernels::sm90::EpilogueOp kernel_op(const EpilogueOps& ops) {
  using kernels::sm90::Act;
  kernels::sm90::EpilogueOp op;
  switch (ops.activation) {
    case Activation::none: op.act = Act::none; break;
    case Activation::silu: op.act = Act::silu; break;
    case Activation::gelu_tanh: op.act = Act::gelu_tanh; break;
    case Activation::relu_squared: op.act = Act::relu_squared; break;
    case Activation::swiglu: op.act = Act::swiglu; break;
    case Activation::swiglu_oss: op.act = Act::swiglu_oss; break;
  }
  if (is_gated(ops.activation))  // forward or backward (activation_grad)
    op.gate = ops.gate_layout == GateLayout::interleaved ? kernels::sm90::Gate::interleaved
                                                         : kernels::sm90::Gate::concatenated;
  if (ops.bias) {
    op.bias = true;
    op.bias_type = elem_type(ops.bias->dtype);
  }
  op.row_scale = ops.row_scale.has_value();
  op.pre_activation = ops.pre_activation.has_value();
  op.activation_grad = ops.activation_grad.has_value();
  return op;
}

KernelConfig make_kernel_config(const Sm90Design& d, DType ab, DType out, Major a_major, Major b_major,
                                bool k_grouped, kernels::sm90::EpilogueOp op, bool gather_a, bool gather_b,
                                bool out_m_major) {
  KernelConfig c;
  c.op = op;
  c.gather_a = gather_a;
  c.gather_b = gather_b;
  c.out_m_major = out_m_major;
  c.tile_m = d.design.tile_m;
  c.tile_n = d.design.tile_n;
  c.tile_k = d.design.tile_k;
  c.stages = d.design.stages;
  c.consumers = d.consumers;
  c.ab = elem_type(ab);
  c.out = elem_type(out);
  c.a_major = a_major == Major::k ? kernels::sm90::AMajor::k : kernels::sm90::AMajor::m;
  c.b_major = b_major == Major::k ? kernels::sm90::BMajor::k : kernels::sm90::BMajor::n;
  c.group_axis = k_grouped ? kernels::sm90::GroupAxis::k : kernels::sm90::GroupAxis::m;
  c.cluster_m = d.design.cluster_m;
  c.cluster_n = d.design.cluster_n;
  c.epilogue = d.design.epilogue == Epilogue::tma_store ? 1 : 0;
  c.epilogue_boxes = c.epilogue == 1 ? d.design.epilogue_boxes : 0;
  c.schedule = d.design.schedule == Schedule::pingpong ? kernels::sm90::KernelSchedule::pingpong
                                                       : kernels::sm90::KernelSchedule::cooperative;
  return c;
}

std::string gather_a_refusal(const KernelConfig& c) {
  // The copies take the producer warpgroup 72 registers a thread, paid for by the consumers (216
  // each; grouped_gemm.cuh): two warpgroups of 192 accumulators a thread need their 240 and leave
  // the producer 24. A 256-row tile's 16 row indices a producer thread spilled even at 72.
  if (c.wide_accumulators())
    return "a_row_index: this design's consumers hold " + std::to_string(c.accumulator_registers()) +
           " accumulators a thread at 240 registers, leaving the producer 24: too few to gather A's rows";
  if (c.tile_m > 128)
    return "a_row_index: this design's " + std::to_string(c.tile_m) +
           "-row tiles give each producer thread " + std::to_string(c.tile_m / 16) +
           " row indices, more than its registers hold to gather A's rows";
  if (c.group_axis != kernels::sm90::GroupAxis::m) return "a_row_index: sm90 kernels gather A's rows in the M-grouped form only";
  if (c.a_major != kernels::sm90::AMajor::k)
    return "a_row_index: sm90 kernels gather rows of a K-major A only (each row's K contiguous, copied 16 bytes at a time)";
  if (c.split_k) return "a_row_index: sm90 kernels do not split K with a gathered A";
  // A cluster along N shares A by TMA multicast; gathered rows are copied by each CTA for itself.
  if (c.cluster_n > 1)
    return "a_row_index: sm90 kernels gather A's rows without a cluster along N only; this design shares A across " +
           std::to_string(c.cluster_n) + " CTAs along N";
  return "";
}

std::string gather_k_refusal(const KernelConfig& c) {
  const std::string who = c.gather_a ? "a_k_index" : "b_k_index";
  // The copies take the producer warpgroup 72 registers a thread, as for gathered rows above.
  if (c.wide_accumulators())
    return who + ": this design's consumers hold " + std::to_string(c.accumulator_registers()) +
           " accumulators a thread at 240 registers, leaving the producer 24: too few to gather along K";
  if (c.group_axis != kernels::sm90::GroupAxis::k)
    return who + ": sm90 kernels gather along K in the K-grouped form only";
  if (c.gather_a && c.a_major != kernels::sm90::AMajor::m)
    return "a_k_index: sm90 kernels gather an M-major A only (each source row's M values contiguous, copied 16 "
           "bytes at a time)";
  if (c.gather_b && c.b_major != kernels::sm90::BMajor::n)
    return "b_k_index: sm90 kernels gather an N-major B only (each source row's N values contiguous, copied 16 "
           "bytes at a time)";
  // A cluster's CTAs share B by multicast; a gathered B is copied by each CTA for itself.
  if (c.gather_b && c.cluster_m > 1)
    return "b_k_index: sm90 kernels gather B without a cluster only; this design's cluster is " +
           std::to_string(c.cluster_m) + " CTAs";
  return "";
}

std::string cluster_n_refusal(const KernelConfig& c) {
  if (c.cluster_n == 1) return "";
  const std::string design = "this design shares A across " + std::to_string(c.cluster_n) + " CTAs along N";
  if (c.group_axis != kernels::sm90::GroupAxis::m)
    return "offsets: the K-grouped form runs on designs without a cluster along N; " + design;
  if (c.ab == kernels::sm90::ElemType::e4m3) return "A: fp8 runs on designs without a cluster along N; " + design;
  return "";
}

namespace {
const char* elem_name(kernels::sm90::ElemType t) {
  switch (t) {
    case kernels::sm90::ElemType::bf16: return "bf16";
    case kernels::sm90::ElemType::fp16: return "fp16";
    case kernels::sm90::ElemType::fp32: return "fp32";
    case kernels::sm90::ElemType::e4m3: return "e4m3";
  }
  return "bf16";
}

const char* act_name(kernels::sm90::Act a) {
  switch (a) {
    case kernels::sm90::Act::none: return "none";
    case kernels::sm90::Act::silu: return "silu";
    case kernels::sm90::Act::gelu_tanh: return "gelu_tanh";
    case kernels::sm90::Act::relu_squared: return "relu_squared";
    case kernels::sm90::Act::swiglu: return "swiglu";
    case kernels::sm90::Act::swiglu_oss: return "swiglu_oss";
  }
  return "none";
}

// The op's fields, named; empty for the identity, so identity kernels keep their text (and cache key).
std::string op_text(const kernels::sm90::EpilogueOp& op, const std::string& ns) {
  if (op.identity()) return "";
  std::string s = ", .op = " + ns + "EpilogueOp{.act = " + ns + "Act::" + act_name(op.act);
  if (op.gated_act())
    s += std::string(", .gate = ") + ns + (op.gate == kernels::sm90::Gate::interleaved ? "Gate::interleaved" : "Gate::concatenated");
  if (op.bias) s += ", .bias = true, .bias_type = " + ns + "ElemType::" + elem_name(op.bias_type);
  if (op.row_scale) s += ", .row_scale = true";
  if (op.pre_activation) s += ", .pre_activation = true";
  if (op.activation_grad) s += ", .activation_grad = true";
  return s + "}";
}
}  // namespace

std::string instantiation_text(const KernelConfig& c) {
  const std::string ns = "gemmops::kernels::sm90::";
  std::string s = ns + "grouped_gemm_kernel<" + ns + "KernelConfig{";
  s += ".tile_m = " + std::to_string(c.tile_m);
  s += ", .tile_n = " + std::to_string(c.tile_n);
  s += ", .tile_k = " + std::to_string(c.tile_k);
  s += ", .stages = " + std::to_string(c.stages);
  s += ", .consumers = " + std::to_string(c.consumers);
  s += ", .ab = " + ns + "ElemType::" + elem_name(c.ab);
  s += ", .out = " + ns + "ElemType::" + elem_name(c.out);
  s += ", .a_major = " + ns + (c.a_major == kernels::sm90::AMajor::k ? "AMajor::k" : "AMajor::m");
  s += ", .b_major = " + ns + (c.b_major == kernels::sm90::BMajor::k ? "BMajor::k" : "BMajor::n");
  s += ", .group_axis = " + ns + (c.group_axis == kernels::sm90::GroupAxis::m ? "GroupAxis::m" : "GroupAxis::k");
  s += ", .cluster_m = " + std::to_string(c.cluster_m);
  if (c.cluster_n != 1) s += ", .cluster_n = " + std::to_string(c.cluster_n);  // (other kernels keep their text)
  s += ", .epilogue = " + std::to_string(c.epilogue);
  if (c.epilogue_boxes != 0) s += ", .epilogue_boxes = " + std::to_string(c.epilogue_boxes);
  s += ", .schedule = " + ns +
       (c.schedule == kernels::sm90::KernelSchedule::pingpong ? "KernelSchedule::pingpong" : "KernelSchedule::cooperative");
  if (c.split_k) s += ", .split_k = true";
  s += op_text(c.op, ns);
  if (c.gather_a) s += ", .gather_a = true";
  if (c.gather_b) s += ", .gather_b = true";  // (absent otherwise: other kernels keep their text and cache key)
  if (c.out_m_major) s += ", .out_m_major = true";
  if (c.fp8_rowwise) s += ", .fp8_rowwise = true";
  s += "}>";
  return s;
}

}  // namespace gemmops::sm90
