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
        store_slab<kOp.out_cols(kTileN)>([&](int i) { return f.entry(a, i, (i / 2) % 2 ? s1 : s0); }, p.store.out,
                                         p.store.out_row_stride, t.row0 + 64 * a, t.row_end, out_col0<kOp>(t.col0),
                                         out_n<kOp>(p.scheduler.n));
      }
  }

  // Accumulator fragment of wgmma m64nNk16 for thread t of the warpgroup: for each 8-column block j,
  // d[4j+0..1] are row (t/32)*16 + (t%32)/4, columns 8j + 2*(t%4) + {0,1}; d[4j+2..3] are 8 rows below.
  // The four threads of a quad hold one row's 8 columns of a block between them. Stored as they
  // are, every warp store touches half sectors; so each quad first transposes four blocks among
  // its threads (shuffles), and each thread then writes one block's 8 columns with 16-byte stores.
  // One 64-row slab of kTileN columns of out; at(i) is the thread's fragment entry i (fp32).
  template <int kTileN, typename ValueAt>
  __device__ __forceinline__ static void store_slab(ValueAt&& at, void* out, long long ld, int row0, int row_end,
                                                    int col0, int n) {
    static_assert(kTileN % 32 == 0, "quads transpose four 8-column blocks at a time");
    const int t = threadIdx.x % 128;
    const int q = t % 4;
    const int r_lo = row0 + (t / 32) * 16 + (t % 32) / 4;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int r = r_lo + 8 * half;
#pragma unroll
      for (int jj = 0; jj < kTileN / 32; ++jj) {
        // Lane q keeps block 4*jj + q; it receives lane l's two values of that block as slot l.
        // The four blocks are first copied out of the accumulators (opaque to the compiler): a
        // lane-dependent choice among wgmma registers themselves makes ptxas serialise the next
        // tile's wgmma (C7518).
        float a0[4], a1[4];
#pragma unroll
        for (int b = 0; b < 4; ++b) {
          a0[b] = at(4 * (4 * jj + b) + 2 * half);
          a1[b] = at(4 * (4 * jj + b) + 2 * half + 1);
          asm volatile("" : "+f"(a0[b]), "+f"(a1[b]));
        }
        float v[4][2] = {};
#pragma unroll
        for (int s = 0; s < 4; ++s) {
          // In round s lane q sends its values of block 4*jj + (q ^ s) to lane q ^ s, so it
          // receives lane (q ^ s)'s values of block 4*jj + q.
          const int j_send = q ^ s;
          float send0 = a0[0], send1 = a1[0];
#pragma unroll
          for (int b = 1; b < 4; ++b) {
            send0 = b == j_send ? a0[b] : send0;
            send1 = b == j_send ? a1[b] : send1;
          }
          const float got0 = __shfl_xor_sync(0xffffffffu, send0, s);
          const float got1 = __shfl_xor_sync(0xffffffffu, send1, s);
#pragma unroll
          for (int l = 0; l < 4; ++l) {
            v[l][0] = l == (q ^ s) ? got0 : v[l][0];
            v[l][1] = l == (q ^ s) ? got1 : v[l][1];
          }
        }
        // Rows past the group's end store nothing (valid = 0): a predicate, not a branch around
        // the shuffles, so accumulator reads never sit in a divergent path.
        const int c = col0 + 8 * (4 * jj + q);
        store_block(out, static_cast<long long>(r) * ld + c, r < row_end ? n - c : 0, v);
      }
    }
  }

  // Eight consecutive columns of one row; `valid` of them lie inside N (all 8 in the common case).
  __device__ __forceinline__ static void store_block(void* out, long long idx, int valid, const float (&v)[4][2]) {
    if constexpr (kOut == ElemType::fp32) {
      float* p = static_cast<float*>(out) + idx;
      if (valid >= 8) {
        reinterpret_cast<float4*>(p)[0] = make_float4(v[0][0], v[0][1], v[1][0], v[1][1]);
        reinterpret_cast<float4*>(p)[1] = make_float4(v[2][0], v[2][1], v[3][0], v[3][1]);
      } else {
#pragma unroll
        for (int i = 0; i < 8; ++i)
          if (i < valid) p[i] = v[i / 2][i % 2];
      }
    } else {
      ::cuda::std::uint32_t w[4];
#pragma unroll
      for (int l = 0; l < 4; ++l)
        w[l] = kOut == ElemType::bf16 ? ptx::pack_bf16x2(v[l][0], v[l][1]) : ptx::pack_f16x2(v[l][0], v[l][1]);
      auto* p = static_cast<::cuda::std::uint16_t*>(out) + idx;
      if (valid >= 8) {
        *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
      } else {
#pragma unroll
        for (int i = 0; i < 8; ++i)
          if (i < valid) p[i] = static_cast<::cuda::std::uint16_t>((w[i / 2] >> (16 * (i % 2))) & 0xFFFFu);
      }
    }
  }
};

}  // namespace gemmops::kernels::sm90
