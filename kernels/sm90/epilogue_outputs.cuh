// kernels/sm90/epilogue_outputs.cuh: the epilogue's second operands, stored by the direct store
// (epilogue.cuh) beside or in place of out: the forward's pre-activation (v before the activation)
// and the activation's backward (dh, s act(h) and the per-64-column partials of dA act(h)).
// The forward's h is stored as out is, by quad-transposed 16-byte blocks (store_slab.cuh) where they
// fit. The backward's thread reads the h elements of its own fragment and writes its own column
// pairs (a quad covers 16 or 32 contiguous bytes of a row); the h words of a batch of blocks (up to
// a 64-column block's 8) are loaded before any is used: loaded one by one between the stores (which
// may alias them) each load waited for its own round trip, 16 a row pair on a 128-wide tile. A TMA
// ring for h loaded at the tile's start under the main loop, and staged TMA stores, are the later
// optimisation.
// Nothing is written back into the accumulators: they stay live into the next tile's MMAs, and a
// lane-dependent write into them serialises that tile's wgmma (C7518).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

#include "ptx/warp.cuh"
#include "sm90/config.cuh"
#include "sm90/epilogue_op.cuh"
#include "sm90/params.cuh"
#include "sm90/store_slab.cuh"

namespace gemmops::kernels::sm90 {
namespace epilogue_outputs {

using ::cuda::std::uint16_t;
using ::cuda::std::uint32_t;

__device__ __forceinline__ float half_to_float(uint32_t h) {
  float f;
  asm("cvt.f32.f16 %0, %1;\n" : "=f"(f) : "h"(static_cast<unsigned short>(h)));
  return f;
}

/// Two 16-bit elements (one 32-bit word) as fp32.
template <ElemType kType>
__device__ __forceinline__ void unpack(uint32_t w, float& v0, float& v1) {
  if constexpr (kType == ElemType::bf16) {
    v0 = __uint_as_float(w << 16);
    v1 = __uint_as_float(w & 0xFFFF0000u);
  } else {
    v0 = half_to_float(w & 0xFFFFu);
    v1 = half_to_float(w >> 16);
  }
}

/// &base[i] for elements of kType.
template <ElemType kType>
__device__ __forceinline__ void* element_ptr(void* base, long long i) {
  return static_cast<char*>(base) + i * elem_bytes(kType);
}
template <ElemType kType>
__device__ __forceinline__ const void* element_ptr(const void* base, long long i) {
  return static_cast<const char*>(base) + i * elem_bytes(kType);
}

template <ElemType kType>
__device__ __forceinline__ uint32_t pack(float v0, float v1) {
  return kType == ElemType::bf16 ? ptx::pack_bf16x2(v0, v1) : ptx::pack_f16x2(v0, v1);
}

template <ElemType kType>
__device__ __forceinline__ void store_pair(void* base, long long idx, float v0, float v1) {
  if constexpr (kType == ElemType::fp32) {
    *reinterpret_cast<float2*>(static_cast<float*>(base) + idx) = make_float2(v0, v1);
  } else {
    *reinterpret_cast<uint32_t*>(static_cast<uint16_t*>(base) + idx) = pack<kType>(v0, v1);
  }
}

template <ElemType kType>
__device__ __forceinline__ void store_quad(void* base, long long idx, const float (&v)[4]) {
  if constexpr (kType == ElemType::fp32) {
    *reinterpret_cast<float4*>(static_cast<float*>(base) + idx) = make_float4(v[0], v[1], v[2], v[3]);
  } else {
    *reinterpret_cast<uint2*>(static_cast<uint16_t*>(base) + idx) =
        make_uint2(pack<kType>(v[0], v[1]), pack<kType>(v[2], v[3]));
  }
}

/// act(gate, up) and its partial derivatives (epilogue.hpp's ActivationGrad), with the fast
/// exponential and division of the forward. swiglu_oss's clamps pass the gradient at their bounds.
struct GatedGrad {
  float act, d_gate, d_up;
};
template <Act kAct>
__device__ __forceinline__ GatedGrad gated_grad(float gate, float up, const OpParams& op) {
  if constexpr (kAct == Act::swiglu) {
    const float s = __fdividef(1.0f, 1.0f + __expf(-gate));
    const float silu = gate * s;
    return {silu * up, up * s * (1.0f + gate * (1.0f - s)), silu};
  } else {  // swiglu_oss
    const float g = fminf(gate, op.limit);
    const float u = fminf(fmaxf(up, -op.limit), op.limit);
    const float s = __fdividef(1.0f, 1.0f + __expf(-op.alpha * g));
    return {(u + 1.0f) * g * s, gate <= op.limit ? (u + 1.0f) * s * (1.0f + op.alpha * g * (1.0f - s)) : 0.0f,
            fabsf(up) <= op.limit ? g * s : 0.0f};
  }
}

/// act(x) and act'(x) of a plain activation (the forward's formulas, epilogue_op.cuh), in `act` and `d_gate`.
template <Act kAct>
__device__ __forceinline__ GatedGrad plain_grad(float x) {
  if constexpr (kAct == Act::silu) {
    const float s = __fdividef(1.0f, 1.0f + __expf(-x));
    return {x * s, s * (1.0f + x * (1.0f - s)), 0.0f};
  } else if constexpr (kAct == Act::gelu_tanh) {  // x sigmoid(z), z = 2 sqrt(2/pi) (x + 0.044715 x^3)
    const float s = __fdividef(1.0f, 1.0f + __expf(-1.5957691216057308f * (x + 0.044715f * x * x * x)));
    return {x * s, s + x * s * (1.0f - s) * 1.5957691216057308f * (1.0f + 0.134145f * x * x), 0.0f};
  } else {  // relu_squared
    const float r = fmaxf(x, 0.0f);
    return {r * r, 2.0f * r, 0.0f};
  }
}

/// A thread's column pair of the activation's backward from its dA elements `da_at(e)`, h pair
/// (gate, up; a plain activation: h in `gate`) and row score `s`: dh's gate and up elements and
/// s act(h) into `out`, with dA act(h) added to the row's partial. Both stores (direct and TMA)
/// compute it so.
struct PairGrad {
  float dh_gate[2], dh_up[2], scaled[2];
};
template <EpilogueOp kOp, typename DaAt>
__device__ __forceinline__ void pair_grad(DaAt&& da_at, const float (&gate)[2], const float (&up)[2], float s,
                                          const OpParams& op, PairGrad& out, float& partial) {
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    const float da = da_at(e);
    GatedGrad g;
    if constexpr (kOp.gated_act()) {
      g = gated_grad<kOp.act>(gate[e], up[e], op);
    } else {
      g = plain_grad<kOp.act>(gate[e]);
    }
    const float sda = s * da;
    out.dh_gate[e] = sda * g.d_gate;
    out.dh_up[e] = sda * g.d_up;
    out.scaled[e] = s * g.act;
    partial += da * g.act;
  }
}

/// The 32-bit words of h a thread reads for its column pair c, c + 1 of one 8-column block j: gate and
/// up (gated), or h (plain); twice as many words in fp32.
template <ElemType kType, bool kGated>
inline constexpr int kHWords = (kType == ElemType::fp32 ? 2 : 1) * (kGated ? 2 : 1);

/// Loads block j's h words (plain loads, not __ldg: the read-only path let ptxas hoist a tile's h
/// loads above the earlier blocks' stores, and the registers they held spilled the 128-accumulator
/// kernels): interleaved h[r, 2c .. 2c + 3] = (gate c, up c, gate c + 1, up c + 1);
/// concatenated (gate c, gate c + 1) at h_ptr and (up c, up c + 1) at h_up_ptr; plain (h c, h c + 1).
template <ElemType kType, bool kGated, bool kInterleaved>
__device__ __forceinline__ void load_h_words(const void* h_ptr, const void* h_up_ptr, int j,
                                             uint32_t (&w)[kHWords<kType, kGated>]) {
  if constexpr (kType == ElemType::fp32) {
    if constexpr (kInterleaved) {
      const uint4 v = *reinterpret_cast<const uint4*>(static_cast<const float*>(h_ptr) + 16 * j);
      w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
    } else {
      const uint2 g = *reinterpret_cast<const uint2*>(static_cast<const float*>(h_ptr) + 8 * j);
      w[0] = g.x, w[1] = g.y;
      if constexpr (kGated) {
        const uint2 u = *reinterpret_cast<const uint2*>(static_cast<const float*>(h_up_ptr) + 8 * j);
        w[2] = u.x, w[3] = u.y;
      }
    }
  } else if constexpr (kInterleaved) {
    const uint2 v = *reinterpret_cast<const uint2*>(static_cast<const uint16_t*>(h_ptr) + 16 * j);
    w[0] = v.x, w[1] = v.y;
  } else {
    w[0] = *reinterpret_cast<const uint32_t*>(static_cast<const uint16_t*>(h_ptr) + 8 * j);
    if constexpr (kGated) w[1] = *reinterpret_cast<const uint32_t*>(static_cast<const uint16_t*>(h_up_ptr) + 8 * j);
  }
}

/// (gate, up) of columns c and c + 1 from load_h_words' words (a plain activation: h in `gate`).
template <ElemType kType, bool kGated, bool kInterleaved>
__device__ __forceinline__ void decode_h_words(const uint32_t (&w)[kHWords<kType, kGated>], float (&gate)[2],
                                               float (&up)[2]) {
  if constexpr (kType == ElemType::fp32) {
    if constexpr (kInterleaved) {
      gate[0] = __uint_as_float(w[0]), up[0] = __uint_as_float(w[1]);
      gate[1] = __uint_as_float(w[2]), up[1] = __uint_as_float(w[3]);
    } else {
      gate[0] = __uint_as_float(w[0]), gate[1] = __uint_as_float(w[1]);
      if constexpr (kGated) up[0] = __uint_as_float(w[2]), up[1] = __uint_as_float(w[3]);
    }
  } else if constexpr (kInterleaved) {
    unpack<kType>(w[0], gate[0], up[0]);
    unpack<kType>(w[1], gate[1], up[1]);
  } else {
    unpack<kType>(w[0], gate[0], gate[1]);
    if constexpr (kGated) unpack<kType>(w[1], up[0], up[1]);
  }
}

}  // namespace epilogue_outputs

/// The forward's pre-activation: v = acc (the accumulators start from the bias) at the product's
/// columns, into params.op.pre_activation in out's type. Rows past the group's end are not stored;
/// the zero tail's rows get zeros (its accumulators start from zeros or hold nothing, no_k).
template <ElemType kOut, EpilogueOp kOp, int kTileN, int kAtoms, int kLen>
__device__ __forceinline__ void store_pre_activation(const float (&acc)[kAtoms][kLen], const TileContext& t,
                                                     const GroupedGemmParams& p) {
  static_assert(kOp.pre_activation && !kOp.activation_grad, "the forward's second output");
  const int n = p.scheduler.n;
  const bool zeros = !kOp.bias && t.no_k;  // nothing set the registers
  // Quad-transposed 16-byte stores (store_slab: full sectors, a quarter of the instructions) where
  // every block starts on 16 bytes: always, but for the up half of concatenated halves, n / 2
  // columns on, which may start on 8. Not beside 192 accumulators a thread (128x192 ping-pong): the
  // transposes' registers spill there (the compile tests).
  constexpr int kChunk = 16 / elem_bytes(kOut);
  constexpr bool kSlabFits = kAtoms * kLen <= 128;
  if (kSlabFits && (!kOp.split_b() || (n / 2) % kChunk == 0)) {
    const long long ld = p.op.pre_activation_row_stride;
#pragma unroll
    for (int a = 0; a < kAtoms; ++a)
      if (a < t.live_atoms) {
        auto value = [&](int i) { return zeros ? 0.0f : acc[a][i]; };
        if constexpr (kOp.split_b()) {  // the gate half, then the up half (its blocks kTileN / 16 on)
          constexpr int kHalf = kTileN / 2;
          direct_store::store_slab<kOut, kHalf>(value, p.op.pre_activation, ld, t.row0 + 64 * a, t.row_end,
                                                t.col0 / 2, n / 2);
          direct_store::store_slab<kOut, kHalf>([&](int i) { return value(i + kTileN / 4); },
                                                epilogue_outputs::element_ptr<kOut>(p.op.pre_activation, n / 2), ld,
                                                t.row0 + 64 * a, t.row_end, t.col0 / 2, n / 2);
        } else {
          direct_store::store_slab<kOut, kTileN>(value, p.op.pre_activation, ld, t.row0 + 64 * a, t.row_end, t.col0, n);
        }
      }
    return;
  }
  // Else each thread its own column pairs (4-byte stores).
  const int tid = threadIdx.x % 128, q = tid % 4;
  const int r_lo = t.row0 + (tid / 32) * 16 + (tid % 32) / 4;
  // The thread's first product column, and the columns left from it: with B loaded as halves
  // (gated, concatenated) the second half's blocks are n / 2 columns on, and a half ends at I.
  constexpr int kHalfBlocks = kOp.split_b() ? kTileN / 16 : kTileN / 8;
  const int first = (kOp.split_b() ? t.col0 / 2 : t.col0) + 2 * q;
  const int cols_left = (kOp.split_b() ? n / 2 : n) - first;
#pragma unroll
  for (int a = 0; a < kAtoms; ++a)
    if (a < t.live_atoms)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = r_lo + 64 * a + 8 * h;
        // The row's pointer at the first column: every block's store is an immediate offset from it
        // (or from the up half's, n / 2 on); indices per block spilled the 192-accumulator kernels.
        void* row = epilogue_outputs::element_ptr<kOut>(
            p.op.pre_activation, static_cast<long long>(r) * p.op.pre_activation_row_stride + first);
        void* row_up = epilogue_outputs::element_ptr<kOut>(row, n / 2);
#pragma unroll
        for (int j = 0; j < kTileN / 8; ++j) {
          const int jh = j % kHalfBlocks;  // the block within its half
          const float v0 = zeros ? 0.0f : acc[a][4 * j + 2 * h], v1 = zeros ? 0.0f : acc[a][4 * j + 2 * h + 1];
          if (r < t.row_end && 8 * jh < cols_left)
            epilogue_outputs::store_pair<kOut>(j < kHalfBlocks ? row : row_up, 8 * jh, v0, v1);
        }
      }
}

/// The activation's backward (EpilogueOp::activation_grad; epilogue.hpp's ActivationGrad): the
/// product is dA (n = I columns); for each element the thread reads its h pair (gate, up; a plain
/// activation: its h) and the row's score, and writes dh's gate and up elements (or its one) into out, s act(h) into
/// params.op.scaled_activation, and per row and 64 columns one fp32 partial of dA act(h): each
/// thread sums its 16 elements of the 64, the quad's shuffles finish the row's 64, lane 0 writes.
/// A warpgroup owns whole rows of a tile (one wgmma spans its width) and tiles start on multiples of
/// 64 columns, so the partials' layout does not depend on the design. Rows past the group's end are
/// neither read nor stored; the zero tail's rows read nothing and store zeros.
template <ElemType kOut, EpilogueOp kOp, int kTileN, int kAtoms, int kLen>
__device__ __forceinline__ void store_activation_grad(const float (&acc)[kAtoms][kLen], const TileContext& t,
                                                      const GroupedGemmParams& p) {
  static_assert(kOp.activation_grad && kOp.act != Act::none && !kOp.bias && !kOp.split_b(),
                "the backward of an activation, over a plain product");
  constexpr bool kGated = kOp.gated_act();
  constexpr bool kInterleaved = kGated && kOp.gate == Gate::interleaved;
  static_assert(kTileN % 64 == 0, "a tile covers whole 64-column partials");
  using namespace epilogue_outputs;
  // Blocks whose h words are loaded together: as many as the registers allow without a spill (the
  // compile tests' check): fewer on 256-wide tiles, fewer still for the clamped SwiGLU's constants
  // and for fp32 h.
  constexpr int kWide = kTileN <= 128 ? 8 : (kOp.act == Act::swiglu_oss ? 2 : 4);
  constexpr int kBatch = kHWords<kOut, kGated> > 2 ? kWide / 2 : kWide;
  const int tid = threadIdx.x % 128, q = tid % 4;
  const int r_lo = t.row0 + (tid / 32) * 16 + (tid % 32) / 4;
  const int n = p.scheduler.n;
  const int rows_readable = t.tail ? 0 : t.row_end - r_lo;  // rows of this thread with h and s to read
#pragma unroll
  for (int a = 0; a < kAtoms; ++a)
    if (a < t.live_atoms)  // uniform across the warpgroup: the quad shuffles below stay converged
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = r_lo + 64 * a + 8 * h;
        const bool readable = 64 * a + 8 * h < rows_readable;
        const bool stored = r < t.row_end;  // the zero tail's rows too (zeros)
        float s = readable ? 1.0f : 0.0f;
        if constexpr (kOp.row_scale) s = readable ? __ldg(p.op.row_scale + r) : 0.0f;
        // The row's pointers at the thread's first column: each block's accesses are immediate
        // offsets from them (indices recomputed per block cost the 256-wide tiles ~40 registers).
        const long long first = t.col0 + 2 * q;
        const long long h_first = static_cast<long long>(r) * p.op.pre_activation_row_stride +
                                  (kInterleaved ? 2 * first : first);
        const long long dh_first = static_cast<long long>(r) * p.store.out_row_stride +
                                   (kInterleaved ? 2 * first : first);
        const void* h_ptr = element_ptr<kOut>(p.op.pre_activation, h_first);
        const void* h_up_ptr = element_ptr<kOut>(p.op.pre_activation, h_first + n);
        void* dh_ptr = element_ptr<kOut>(p.store.out, dh_first);
        void* dh_up_ptr = element_ptr<kOut>(p.store.out, dh_first + n);
        void* a_ptr = element_ptr<kOut>(p.op.scaled_activation,
                                        static_cast<long long>(r) * p.op.scaled_activation_row_stride + first);
        const int cols_left = n - t.col0 - 2 * q;  // block j's columns lie inside when 8 j < cols_left
#pragma unroll
        for (int b = 0; b < kTileN / 64; ++b) {
          float partial = 0.0f;
#pragma unroll
          for (int j0 = 0; j0 < 8; j0 += kBatch) {
            // kBatch blocks' h words first, all in flight together (one round trip for them).
            uint32_t words[kBatch][kHWords<kOut, kGated>];
#pragma unroll
            for (int jj = 0; jj < kBatch; ++jj) {
              const int j = 8 * b + j0 + jj;
              if (readable && 8 * j < cols_left) load_h_words<kOut, kGated, kInterleaved>(h_ptr, h_up_ptr, j, words[jj]);
            }
#pragma unroll
            for (int jj = 0; jj < kBatch; ++jj) {
              const int j = 8 * b + j0 + jj;
              const bool inside = 8 * j < cols_left;  // the thread's product columns c = col0 + 8 j + 2 q, c + 1
              // (gate, up) of columns c and c + 1: zeros where nothing is to be read
              float gate[2] = {0.0f, 0.0f}, up[2] = {0.0f, 0.0f};
              if (readable && inside) decode_h_words<kOut, kGated, kInterleaved>(words[jj], gate, up);
              PairGrad g;
              pair_grad<kOp>([&](int e) { return t.no_k ? 0.0f : acc[a][4 * j + 2 * h + e]; }, gate, up, s, p.op, g,
                             partial);
              if (stored && inside) {
                if constexpr (kInterleaved) {
                  const float w[4] = {g.dh_gate[0], g.dh_up[0], g.dh_gate[1], g.dh_up[1]};
                  store_quad<kOut>(dh_ptr, 16 * j, w);
                } else {
                  store_pair<kOut>(dh_ptr, 8 * j, g.dh_gate[0], g.dh_gate[1]);
                  if constexpr (kGated) store_pair<kOut>(dh_up_ptr, 8 * j, g.dh_up[0], g.dh_up[1]);
                }
                store_pair<kOut>(a_ptr, 8 * j, g.scaled[0], g.scaled[1]);
              }
            }
          }
          // The quad holds the row's 64 columns of block b: lanes q ^ 1 and q ^ 2 add theirs, in an
          // order every lane shares (deterministic).
          partial += __shfl_xor_sync(0xffffffffu, partial, 1);
          partial += __shfl_xor_sync(0xffffffffu, partial, 2);
          const int chunk = t.col0 / 64 + b;
          if (q == 0 && stored && 64 * chunk < n)
            p.op.score_grad_partials[static_cast<long long>(r) * p.op.score_grad_row_stride + chunk] = partial;
        }
      }
}

}  // namespace gemmops::kernels::sm90
