// include/gemmops/metadata.hpp: what an operator can serve (constraints) and how it is built (design)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <vector>

#include "gemmops/arguments.hpp"
#include "gemmops/scaling.hpp"
#include "gemmops/target.hpp"

namespace gemmops {

/// How the kernel is organised. cpu_blocked is the host provider; the others are GPU schedules
/// (simt: the portable kernel of plain FMA, one tile per block).
enum class Schedule { cpu_blocked, cooperative, pingpong, small_m, custom, simt };
std::string_view name(Schedule s);  ///< "cpu", "coop", "pingpong", "smallm", "custom", "simt"

/// How results leave the kernel: stored from registers, or staged in shared memory and written by
/// TMA bulk stores that overlap the next tile's main loop. Fused epilogues (bias, SiLU, SwiGLU,
/// scales) will be further values.
enum class Epilogue { store, tma_store };
std::string_view name(Epilogue e);  ///< "store", "tma"

/// The shape of the kernel: tile, cluster, pipeline depth, schedule and epilogue. Zero tiles mean
/// "not tiled".
struct Design {
  int tile_m = 0, tile_n = 0, tile_k = 0;
  int cluster_m = 1, cluster_n = 1;
  int stages = 0;
  Schedule schedule = Schedule::custom;
  Epilogue epilogue = Epilogue::store;
  /// TMA epilogue: the staging ring of each consumer warpgroup, in 64x64 boxes; 0 is one tile's
  /// worth. A shorter ring frees shared memory for a pipeline stage, a longer one keeps more stores
  /// in flight.
  int epilogue_boxes = 0;
  /// "128x256x64_c2x1_s4_coop", with "_tma" for the TMA epilogue ("_tma_ring2" with a staging ring
  /// of 2 boxes; "cpu" for the host provider).
  std::string to_string() const;
  friend bool operator==(const Design&, const Design&) = default;
};

/// The epilogue ops (epilogue.hpp) an operator serves. Unlike the lists of OperandConstraints, an
/// empty list here means "none": a default-constructed EpilogueSupport serves only the empty
/// epilogue (Activation::none, no bias, no row scale), which every operator serves.
struct EpilogueSupport {
  std::vector<Activation> activations;   ///< served besides Activation::none
  std::vector<GateLayout> gate_layouts;  ///< the layouts the gated activations (swiglu...) are served in
  bool bias = false;
  bool row_scale = false;
  bool pre_activation = false;   ///< EpilogueOps::pre_activation, the forward's second output
  bool activation_grad = false;  ///< EpilogueOps::activation_grad, the gated activation's backward
  /// pre_activation / activation_grad have code that has not yet passed the GPU suite: served only
  /// on request (GEMMOPS_TRIAL_DESIGNS=1), refused with that reason otherwise.
  bool trial_pre_activation = false;
  bool trial_activation_grad = false;
  /// Every activation, both gate layouts, bias, row scale and the second operands (the CPU operators).
  static EpilogueSupport all();
  friend bool operator==(const EpilogueSupport&, const EpilogueSupport&) = default;
};

/// The rules an operator puts on its operands, on top of the operation's own (validate()).
/// An empty list means "any" (except in `epilogue`, see EpilogueSupport).
struct OperandConstraints {
  std::vector<OperationKind> kinds;
  std::vector<DType> a_dtypes, b_dtypes, out_dtypes;
  std::vector<DType> accumulator_dtypes{DType::fp32};
  bool a_b_same_dtype = true;
  std::vector<Major> a_majors, b_majors;
  bool out_row_major = false;         ///< out's last dimension must have stride 1 (but see below)
  /// K-grouped: also serves out (G, M, N) M-major (stride 1 along M: each group's result transposed
  /// in memory, e.g. the transposed view of a (G, N, M) tensor, an nn.Linear-style weight's gradient).
  bool k_grouped_out_m_major = false;
  int alignment_bytes = 1;            ///< data pointers and every non-unit stride, in bytes
  Device::Kind device = Device::Kind::cpu;
  /// M-grouped: serves groups that start at aligned offsets (GroupedGemmArguments::group_alignment > 1).
  bool aligned_groups = false;
  /// M-grouped: serves a gathered A (GroupedGemmArguments::a_row_index).
  bool a_row_index = false;
  /// K-grouped: serves a gathered A and/or B along K (GroupedGemmArguments::a_k_index, b_k_index).
  bool a_k_index = false, b_k_index = false;
  /// Forms and layouts this operator has code for that have not yet passed the GPU suite: served
  /// only on request (GEMMOPS_TRIAL_DESIGNS=1), refused with that reason otherwise.
  std::vector<OperationKind> trial_kinds;
  bool trial_aligned_groups = false;
  bool trial_a_row_index = false;
  bool trial_k_index = false;  // a_k_index and b_k_index
  bool trial_k_grouped_out_m_major = false;
  EpilogueSupport epilogue;           ///< default: only the empty epilogue
  /// fp8 scales served (scaling.hpp); the default serves none, so scaled operands are refused.
  ScalingSupport scalings;
};

/// Everything discovery knows about an operator without compiling or running it.
struct OperatorMetadata {
  std::string name;                 ///< see make_operator_name()
  std::string provider;             ///< "cpu", "sm90", or a user's
  OperandConstraints constraints;
  Design design;
  Target target;                    ///< the architecture the operator is built for
  /// A design not yet verified on hardware: discovery and autotune offer it only on request
  /// (GEMMOPS_TRIAL_DESIGNS=1, AutotuneOptions::include_trial), and then rank it after every other
  /// operator, as its estimate is a guess.
  bool trial = false;
};

/// The one function that names operators, in a fixed order: target, operation, dtypes, accumulator,
/// design. E.g. "sm90a_grouped_gemm_m_bf16_f32acc_128x256x64_c2x1_s4_coop".
std::string make_operator_name(const Target& target, std::string_view operation, DType ab, DType out,
                               DType accumulator, const Design& design);

/// Checks valid `args` against `constraints`; unsupported with the operand and the rule otherwise.
/// The one checker of support: operators answer supports() from their metadata through it.
Status check_constraints(const OperandConstraints& constraints, const Arguments& args);

}  // namespace gemmops
