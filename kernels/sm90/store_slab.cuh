// kernels/sm90/store_slab.cuh: one 64-row slab of a warpgroup's accumulators stored straight from
// registers: each quad transposes four 8-column blocks among its threads (shuffles), so every thread
// writes one block's 8 columns with one 16-byte store. out's rows must be 16-byte aligned and the
// slab's first column a multiple of 8. Used by the direct store (epilogue.cuh), by the TMA store for
// slabs its boxes cannot take (epilogue_tma.cuh), and for the epilogue's second operands
// (epilogue_outputs.cuh).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

#include "ptx/warp.cuh"
#include "sm90/config.cuh"

namespace gemmops::kernels::sm90::direct_store {

// Eight consecutive columns of one row; `valid` of them lie inside N (all 8 in the common case).
template <ElemType kOut>
__device__ __forceinline__ void store_block(void* out, long long idx, int valid, const float (&v)[4][2]) {
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

/// The quad's transpose of four 8-column blocks of one row: lane q holds (a0[b], a1[b]), its column
/// pair 2q, 2q + 1 of block b; afterwards v[l] is lane l's pair of block q, so lane q holds block q's
/// 8 columns in order. Every lane of the warp must take part (shuffles).
__device__ __forceinline__ void quad_transpose(const float (&a0)[4], const float (&a1)[4], float (&v)[4][2]) {
  const int q = threadIdx.x % 4;
#pragma unroll
  for (int l = 0; l < 4; ++l) v[l][0] = v[l][1] = 0.0f;
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    // In round s lane q sends its values of block q ^ s to lane q ^ s, so it receives lane
    // (q ^ s)'s values of block q.
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
}

// Accumulator fragment of wgmma m64nNk16 for thread t of the warpgroup: for each 8-column block j,
// d[4j+0..1] are row (t/32)*16 + (t%32)/4, columns 8j + 2*(t%4) + {0,1}; d[4j+2..3] are 8 rows below.
// The four threads of a quad hold one row's 8 columns of a block between them. Stored as they
// are, every warp store touches half sectors; so each quad first transposes four blocks among
// its threads (shuffles), and each thread then writes one block's 8 columns with 16-byte stores.
// One 64-row slab of kTileN columns of out; at(i) is the thread's fragment entry i (fp32).
template <ElemType kOut, int kTileN, typename ValueAt>
__device__ __forceinline__ void store_slab(ValueAt&& at, void* out, long long ld, int row0, int row_end, int col0,
                                           int n) {
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
      float v[4][2];
      quad_transpose(a0, a1, v);
      // Rows past the group's end store nothing (valid = 0): a predicate, not a branch around
      // the shuffles, so accumulator reads never sit in a divergent path.
      const int c = col0 + 8 * (4 * jj + q);
      store_block<kOut>(out, static_cast<long long>(r) * ld + c, r < row_end ? n - c : 0, v);
    }
  }
}

}  // namespace gemmops::kernels::sm90::direct_store
