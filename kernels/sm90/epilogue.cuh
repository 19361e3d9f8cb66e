// kernels/sm90/epilogue.cuh: the store of one consumer warpgroup's accumulators (64 x TILE_N) to out.
// Needs out's rows 16-byte aligned (the operators' alignment rule) and N-contiguous.
// Rows at or past the group's end row belong to the next group (or to nobody) and are never
// stored; columns past N neither. A store mechanism: the fused op (activation, row scale; the bias
// is where the accumulators start) is applied to each element as it is read for the store
// (epilogue_op.cuh), through the store() signature both mechanisms share. The second operands
// (pre-activation, the gated activation's backward) are stored here only (epilogue_outputs.cuh).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

#include "ptx/warp.cuh"
#include "sm90/config.cuh"
#include "sm90/epilogue_op.cuh"
#include "sm90/epilogue_outputs.cuh"
#include "sm90/params.cuh"
#include "sm90/store_slab.cuh"

namespace gemmops::kernels::sm90 {

template <ElemType kOut>
struct StoreEpilogue {
  /// The store signature every mechanism shares: stores the live atoms' rows of the warpgroup's
  /// kAtoms fragments of 64 x kTileN accumulators through kOp (epilogue_op.cuh). The staging ring
  /// is the TMA store's (unused here).
  template <EpilogueOp kOp, int kTileN, int kAtoms, int kRing, int kLen>
  __device__ __forceinline__ static void store(float (&acc)[kAtoms][kLen], const TileContext& t,
                                               ::cuda::std::uint8_t*, int&, const GroupedGemmParams& p) {
    if constexpr (kOp.activation_grad) {  // out is dh, stored with the other outputs
      store_activation_grad<kOut, kOp, kTileN, kAtoms>(acc, t, p);
      return;
    }
    if constexpr (kOp.pre_activation) store_pre_activation<kOut, kOp, kTileN, kAtoms>(acc, t, p);
    const OpFragment<kOp, kTileN, kAtoms, kLen> f(acc, p, t);
#pragma unroll
    for (int a = 0; a < kAtoms; ++a)
      if (a < t.live_atoms) {
        const float s0 = f.row_scale(a, 0), s1 = f.row_scale(a, 1);
        direct_store::store_slab<kOut, kOp.out_cols(kTileN)>(
            [&](int i) { return f.entry(a, i, (i / 2) % 2 ? s1 : s0); }, p.store.out, p.store.out_row_stride,
            t.row0 + 64 * a, t.row_end, out_col0<kOp>(t.col0), out_n<kOp>(p.scheduler.n));
      }
  }
};

}  // namespace gemmops::kernels::sm90
