// kernels/sm90/config.cuh: KernelConfig, the compile-time shape of one grouped GEMM kernel
// SPDX-License-Identifier: Apache-2.0
#pragma once

// Host code includes this file too (src/sm90 sizes launches with the same functions).
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define GEMMOPS_HD __host__ __device__
#else
#define GEMMOPS_HD
#endif

namespace gemmops::kernels::sm90 {

/// e4m3: A and B only, read by the fp8 main loop (sm90/mainloop_fp8.cuh).
enum class ElemType : int { bf16 = 0, fp16 = 1, fp32 = 2, e4m3 = 3 };
/// Bytes of one element: what shared-memory stages, staging boxes and TMA boxes count in.
GEMMOPS_HD constexpr int elem_bytes(ElemType t) { return t == ElemType::fp32 ? 4 : t == ElemType::e4m3 ? 1 : 2; }
enum class BMajor : int { k = 0, n = 1 };
enum class AMajor : int { k = 0, m = 1 };
/// Which dimension the offsets split: the rows of A and out (M-grouped, dense, batched) or K
/// (K-grouped: out holds one (M, N) result per group, stacked by rows).
enum class GroupAxis : int { m = 0, k = 1 };
/// How the consumer warpgroups share the work. Cooperative: all of them work on one tile, 64 rows
/// each. Ping-pong: each warpgroup owns a whole tile (the CTA's tiles alternate between the two),
/// so one warpgroup's epilogue runs under the other's main loop.
enum class KernelSchedule : int { cooperative = 0, pingpong = 1 };

/// The activation of the fused epilogue op (include/gemmops/epilogue.hpp has the meaning of each).
enum class Act : int { none = 0, silu, gelu_tanh, relu_squared, swiglu, swiglu_oss };
/// Where a gated activation's gate and up columns sit among the product's N = 2I columns.
enum class Gate : int { concatenated = 0, interleaved = 1 };

/// The fused epilogue op, a compile-time part of the kernel applied to the fp32 accumulators before
/// they are converted and stored (sm90/epilogue_op.cuh): v = acc + bias[g, c]; v = act(v) (gated:
/// act(gate, up), half the columns); out = convert(v * row_scale[r]). Its run-time values (pointers,
/// alpha, limit) are in GroupedGemmParams::op (OpParams). The default is the identity: the kernel of before.
struct EpilogueOp {
  Act act = Act::none;
  Gate gate = Gate::concatenated;   // gated activations only
  bool bias = false;                // params.op.bias: (G, N) per group and product column
  ElemType bias_type = ElemType::fp32;  // fp32, or out's 16-bit type
  bool row_scale = false;           // params.op.row_scale: (rows,) fp32
  // A second output: v before the activation, (rows, N) in out's type, at params.op.pre_activation.
  bool pre_activation = false;
  // The activation's backward (sm90/epilogue_outputs.cuh): the product is dA (N = I columns); reads
  // h (rows, 2I gated, else I) at params.op.pre_activation and the score as the row scale, writes dh
  // (h's shape) to out, s act(h) and the per-64-column partials of dA act(h).
  bool activation_grad = false;

  GEMMOPS_HD constexpr bool identity() const {
    return act == Act::none && !bias && !row_scale && !pre_activation && !activation_grad;
  }
  GEMMOPS_HD constexpr bool operator==(const EpilogueOp&) const = default;
  /// The activation pairs gate and up columns (forward or backward).
  GEMMOPS_HD constexpr bool gated_act() const { return act == Act::swiglu || act == Act::swiglu_oss; }
  /// The forward of a gated activation: out has half the product's columns.
  GEMMOPS_HD constexpr bool gated() const { return gated_act() && !activation_grad; }
  /// Stores more than out (the second operands, sm90/epilogue_outputs.cuh).
  GEMMOPS_HD constexpr bool second_operands() const { return pre_activation || activation_grad; }
  /// Gated and concatenated: B's tile is loaded as two halves (gate columns, then the matching up
  /// columns), so accumulator column j pairs with j + TILE_N / 2 in the same thread.
  GEMMOPS_HD constexpr bool split_b() const { return gated() && gate == Gate::concatenated; }
  /// Columns of out a tile of `tile_n` product columns stores.
  GEMMOPS_HD constexpr int out_cols(int tile_n) const { return gated() ? tile_n / 2 : tile_n; }
  /// 64x64 boxes the TMA store stages for 64 product columns of a 64-row slab: the activation's
  /// backward, dh's (two when gated) and s act(h)'s; otherwise one.
  GEMMOPS_HD constexpr int boxes_per_chunk() const { return activation_grad ? (gated_act() ? 3 : 2) : 1; }
};

/// One instantiation of the kernel; the host writes it with named fields, e.g.
/// KernelConfig{.tile_m = 128, .tile_n = 256, .stages = 4, .consumers = 2, ...}.
struct KernelConfig {
  int tile_m = 128;          // cooperative: the consumers' rows together (64 or 128 each); ping-pong: a warpgroup's tile
  int tile_n = 256;          // 64, 128, 192 or 256 (one wgmma instruction spans the whole tile width)
  int tile_k = 64;           // one 128-byte swizzle row (k_row_bytes): 64 16-bit elements, 128 e4m3
  int stages = 4;            // shared-memory pipeline depth
  int consumers = 2;         // consumer warpgroups
  ElemType ab = ElemType::bf16;
  ElemType out = ElemType::bf16;
  AMajor a_major = AMajor::k;
  BMajor b_major = BMajor::k;
  GroupAxis group_axis = GroupAxis::m;
  int cluster_m = 1;         // CTAs of a cluster along M; they share (multicast) each B tile
  // CTAs of a cluster along N (M-grouped, TMA-loaded A; not with cluster_m): they share (multicast)
  // each A tile, so a scheduler unit stays tile_m rows high (a routed group's last rows spill into
  // one more unit of 128 rows, not of 256) and A crosses L2 once per cluster.
  int cluster_n = 1;
  int epilogue = 0;          // 0: direct 16-byte stores; 1: staged in shared memory, TMA bulk stores
  int epilogue_boxes = 0;    // TMA epilogue: the staging ring per warpgroup in 64x64 boxes; 0: one tile's
  KernelSchedule schedule = KernelSchedule::cooperative;
  // Split-K (M-grouped only): the kernel reads params.k_splits and fixes up split tiles. A separate
  // instantiation, so the kernel that does not split carries none of its code.
  bool split_k = false;
  EpilogueOp op{};           // the fused epilogue op (identity: out = the product)
  // A's rows read through params.mainloop.a_row_index by the producer warpgroup's cp.async copies
  // instead of TMA, by consumers without wide accumulators. M-grouped: K-major A (sm90/gather_a.cuh).
  bool gather_a = false;
  // K-grouped: A (M-major) and/or B (N-major) read along K through params.mainloop.a_row_index /
  // b_row_index: each k-row is one source row's M (N) values, copied by the producer warpgroup
  // (sm90/gather_k.cuh); gather_b: without a cluster (B is never multicast then).
  bool gather_b = false;
  // K-grouped, TMA epilogue: out stored M-major (each group's result transposed in memory: the
  // transposed view of a (G, N, M) tensor), through a 3D (M, N, G) tensor map that clips each box at
  // its group's M and N. What an nn.Linear-style weight's gradient needs (sm90/epilogue_tma.cuh).
  bool out_m_major = false;
  // The fp8 main loop's scales (ab == e4m3): false, A's 1x128 and B's 128x128 blocks, promoted per
  // 128 K; true, a scale per row of A and per column of B over all of K (torch's "rowwise"), applied
  // once to the promoted sum after the main loop.
  bool fp8_rowwise = false;

  /// Rows and columns of one scheduler unit: the cluster's CTAs take adjacent tiles of one group.
  GEMMOPS_HD constexpr int unit_m() const { return tile_m * cluster_m; }
  GEMMOPS_HD constexpr int unit_n() const { return tile_n * cluster_n; }
  GEMMOPS_HD constexpr int cluster_size() const { return cluster_m * cluster_n; }
  /// A 2-CTA cluster along M takes a group's last unit, where one CTA's rows cover what is left of
  /// the group, as two column tiles side by side (tile_scheduler.cuh, group_units) instead of a tile
  /// of rows past the group for its second CTA. 16-bit M-grouped kernels without split-K, and not
  /// with a gathered A: there both CTAs would gather the same rows, and on Mixtral's dgated piece
  /// that ran 4.3% slower (H100, 2026-12-07; Qwen3's 1.3% faster), while plain A gained up to 12%.
  /// GEMMOPS_PAIR_GATHERED_FORWARD (an A/B define, kernel side only): pairs a gathered A without the
  /// activation's backward too, the MoE up projection, whose 2-CTA pick ran 1.02-1.10x slower than
  /// its 1-CTA twin (H100, 2026-12-07); the suite ran this pairing with a gathered A (v28).
  GEMMOPS_HD constexpr bool pairs_last_unit() const {
#ifdef GEMMOPS_PAIR_GATHERED_FORWARD
    const bool gathered_ok = !gather_a || !op.activation_grad;
#else
    const bool gathered_ok = !gather_a;
#endif
    return cluster_m == 2 && group_axis == GroupAxis::m && !split_k && ab != ElemType::e4m3 && gathered_ok;
  }
  /// The first row of CTA `rank`'s tile in its scheduler unit (a cluster along N shares the rows).
  GEMMOPS_HD constexpr int cta_row_offset(int rank) const { return cluster_m > 1 ? rank * tile_m : 0; }
  /// Rows of A (K-major) or 64-row M atoms (M-major) each CTA loads and multicasts.
  GEMMOPS_HD constexpr int a_rows_per_cta() const { return tile_m / cluster_n; }
  /// Rows of B (K-major) or 64-wide N atoms (N-major) each CTA loads and multicasts.
  GEMMOPS_HD constexpr int b_rows_per_cta() const { return tile_n / cluster_m; }
  /// Rows of one K-major B box: a CTA's share, or half the tile when the gated op loads B's gate and
  /// up columns as two halves (with two CTAs a share is a half).
  GEMMOPS_HD constexpr int b_box_rows() const { return op.split_b() ? tile_n / 2 : b_rows_per_cta(); }
  /// Columns of out one tile stores (half the product's with a gated op).
  GEMMOPS_HD constexpr int out_tile_n() const { return op.out_cols(tile_n); }

  GEMMOPS_HD constexpr bool pingpong() const { return schedule == KernelSchedule::pingpong; }
  /// Rows of out one consumer warpgroup computes and stores per tile, in 64-row wgmma atoms.
  GEMMOPS_HD constexpr int warpgroup_rows() const { return pingpong() ? tile_m : tile_m / consumers; }
  GEMMOPS_HD constexpr int m_atoms() const { return warpgroup_rows() / 64; }
  /// More than 128 fp32 accumulators a consumer thread (128x192 ping-pong: 192): the consumers take
  /// 240 registers, and the split-K fix-up does not fit beside them (no split-K twin, plan.cpp).
  /// Some operand is copied by the producer warpgroup (cp.async) instead of TMA.
  GEMMOPS_HD constexpr bool gathers() const { return gather_a || gather_b; }
  GEMMOPS_HD constexpr bool wide_accumulators() const { return accumulator_registers() > 128; }
  /// fp32 accumulators a consumer thread holds: the product's, and the fp8 main loop's block sums
  /// beside it (128-wide: two, one set's MMAs run while the other is promoted; 192-wide: one, as
  /// three sets of 96 do not fit; mainloop_fp8.cuh).
  GEMMOPS_HD constexpr int accumulator_registers() const {
    return (ab != ElemType::e4m3 ? 1 : tile_n == 128 ? 3 : 2) * m_atoms() * tile_n / 2;
  }
  /// Tiles a CTA works on at once (the raster's footprint counts them).
  GEMMOPS_HD constexpr int tiles_in_flight() const { return pingpong() ? consumers : 1; }

  GEMMOPS_HD constexpr int threads() const { return 128 * (consumers + 1); }
  /// Bytes of one M or N row's tile_k elements of A or B in a stage (K-major: a swizzle row).
  GEMMOPS_HD constexpr int k_row_bytes() const { return tile_k * elem_bytes(ab); }
  GEMMOPS_HD constexpr int a_stage_bytes() const { return tile_m * k_row_bytes(); }
  GEMMOPS_HD constexpr int b_stage_bytes() const { return tile_n * k_row_bytes(); }
  GEMMOPS_HD constexpr int stage_bytes() const { return a_stage_bytes() + b_stage_bytes(); }
  /// full and empty per stage, and the two ping-pong turn barriers.
  GEMMOPS_HD constexpr int barrier_bytes() const { return 16 * stages + 16 + (loads_h_by_tma() ? 16 : 0); }
  /// The TMA store's activation backward loads h by TMA into its chunk's boxes, on one mbarrier per
  /// consumer warpgroup (sm90/epilogue_tma.cuh).
  GEMMOPS_HD constexpr bool loads_h_by_tma() const { return epilogue == 1 && op.activation_grad; }
  /// The TMA epilogue's ring of 64x64 staging boxes of out's elements per consumer warpgroup.
  /// The activation's backward stages a chunk's outputs (dh in one or two boxes, s act(h)) together:
  /// the ring holds at least one chunk's boxes.
  GEMMOPS_HD constexpr int epilogue_ring() const {
    if (epilogue != 1) return 0;
    const int ring = epilogue_boxes > 0 ? epilogue_boxes : m_atoms() * (out_tile_n() / 64);
    return ring > op.boxes_per_chunk() ? ring : op.boxes_per_chunk();
  }
  GEMMOPS_HD constexpr int epilogue_warpgroup_bytes() const { return epilogue_ring() * 64 * 64 * elem_bytes(out); }
  GEMMOPS_HD constexpr int epilogue_bytes() const { return consumers * epilogue_warpgroup_bytes(); }
  /// The scheduler's table: per group its tile prefix, first row and end row.
  GEMMOPS_HD static constexpr int scheduler_bytes(int groups) { return 12 * groups; }
  /// Dynamic shared memory a launch for `groups` groups asks for (1 KiB slack aligns the tiles).
  GEMMOPS_HD constexpr int smem_bytes(int groups) const {
    return 1024 + stages * stage_bytes() + epilogue_bytes() + barrier_bytes() + scheduler_bytes(groups);
  }
};

}  // namespace gemmops::kernels::sm90
