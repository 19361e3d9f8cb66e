// kernels/sm90/epilogue_op.cuh: the fused epilogue op (KernelConfig::op), applied in place to one
// warpgroup's fp32 accumulator fragments before a store mechanism converts and writes them:
// v = acc + bias[g, c]; v = act(v) (gated: act(gate, up), half the columns); v *= row_scale[r].
// Every element stays in the thread that holds it but for the interleaved gate layout, whose pairs
// are compacted with quad shuffles. The identity op compiles to nothing.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

#include "sm90/config.cuh"
#include "sm90/params.cuh"

namespace gemmops::kernels::sm90 {

/// Where one consumer warpgroup's part of a tile lies: what every store mechanism and op reads.
struct TileContext {
  int row0;        // the warpgroup's first row of out
  int row_end;     // rows at or past it belong to the next group (or none) and are never stored
  int col0;        // the tile's first product column (B's); out's is col0 / 2 with a gated op
  int group;       // the problem's group: the bias row
  int live_atoms;  // 64-row atoms with rows to store
  int consumer;    // the warpgroup (its TMA staging and named barrier)
  bool no_k;       // no k-block summed: the product is zeros, the accumulators hold nothing
  bool tail;       // the zero tail (rows past the last group): zeros, no op
};

/// The op's geometry: out columns of a tile, its first out column and out's width.
template <EpilogueOp kOp>
__device__ __forceinline__ int out_col0(int col0) { return kOp.gated() ? col0 / 2 : col0; }
template <EpilogueOp kOp>
__device__ __forceinline__ int out_n(int n) { return kOp.gated() ? n / 2 : n; }

namespace epilogue_op {

/// x * sigmoid(s) with the fast exponential and division (about 2 ulp; exact limits at +-inf).
__device__ __forceinline__ float times_sigmoid(float x, float s) { return __fdividef(x, 1.0f + __expf(-s)); }

template <Act kAct>
__device__ __forceinline__ float activate(float x) {
  if constexpr (kAct == Act::silu) {
    return times_sigmoid(x, x);
  } else if constexpr (kAct == Act::gelu_tanh) {
    // 0.5 x (1 + tanh(y)) = x sigmoid(2y), y = sqrt(2/pi) (x + 0.044715 x^3)
    const float y2 = 1.5957691216057308f * (x + 0.044715f * x * x * x);
    return times_sigmoid(x, y2);
  } else if constexpr (kAct == Act::relu_squared) {
    const float r = fmaxf(x, 0.0f);
    return r * r;
  } else {
    return x;
  }
}

template <Act kAct>
__device__ __forceinline__ float activate_gated(float gate, float up, const EpilogueOpParams& op) {
  if constexpr (kAct == Act::swiglu) {
    return times_sigmoid(gate, gate) * up;
  } else {  // swiglu_oss (gpt-oss)
    const float g = fminf(gate, op.limit);
    const float u = fminf(fmaxf(up, -op.limit), op.limit);
    return (u + 1.0f) * times_sigmoid(g, op.alpha * g);
  }
}

/// The bias as fp32: p[i] when column c + i lies before `valid`, else 0. `p` points at column c:
/// the loads of a thread's blocks take immediate offsets from one pointer.
template <ElemType kType>
__device__ __forceinline__ float bias_at(const void* p, int i, int c, int valid) {
  if (c + i >= valid) return 0.0f;
  if constexpr (kType == ElemType::fp32) {
    return __ldg(static_cast<const float*>(p) + i);
  } else {
    const unsigned short h = __ldg(static_cast<const unsigned short*>(p) + i);
    if constexpr (kType == ElemType::bf16) {
      return __uint_as_float(static_cast<unsigned>(h) << 16);
    } else {
      float f;
      asm("cvt.f32.f16 %0, %1;\n" : "=f"(f) : "h"(h));
      return f;
    }
  }
}

template <ElemType kType>
__device__ __forceinline__ const void* bias_ptr(const void* bias, long long i) {
  return static_cast<const char*>(bias) + i * (kType == ElemType::fp32 ? 4 : 2);
}

/// The product column of the tile's accumulator column j (a multiple of 2): with B loaded as two
/// halves (gated, concatenated), the first half holds gate columns col0 / 2 .., the second the up
/// columns I + col0 / 2 .. (I = n / 2).
template <EpilogueOp kOp, int kTileN>
__device__ __forceinline__ int product_col(int col0, int j, int n) {
  if constexpr (kOp.split_b()) {
    return j < kTileN / 2 ? col0 / 2 + j : n / 2 + col0 / 2 + (j - kTileN / 2);
  } else {
    return col0 + j;
  }
}

}  // namespace epilogue_op

/// Applies kOp in place to a warpgroup's kAtoms fragments of 64 x kTileN (wgmma m64nNk16 layout:
/// thread t holds, for each 8-column block j, columns 8j + 2(t%4) + {0,1} of rows (t/32)*16 + (t%32)/4
/// and 8 below, in d[4j .. 4j+3]). Afterwards the first kOp.out_cols(kTileN) / 2 entries of each
/// fragment are a fragment of out's tile in the same layout. Called by all 128 threads.
template <EpilogueOp kOp, int kTileN, int kAtoms, int kLen>
__device__ __forceinline__ void apply_op(float (&acc)[kAtoms][kLen], const GroupedGemmParams& p, const TileContext& t) {
  static_assert(kLen == kTileN / 2, "one fp32 fragment of 64 x kTileN");
  if constexpr (kOp.identity()) return;
  using namespace epilogue_op;
  const int tid = threadIdx.x % 128;
  const int q = tid % 4;
  // Bias, activation (and the zeros of a tile without k-blocks) block by block: each block's bias
  // values are live only while its columns are worked on (all of a 256-wide tile's bias loaded first
  // spilled the 128x256 kernels). No bias in the zero tail, whose product is zeros: every activation
  // maps 0 to 0, so its rows stay zeros.
  // The thread's first column of the first half (all of the tile unless B is loaded as halves) and
  // of the second; a block j's columns are 8j (+1) on from them.
  const int bias_valid = t.tail ? 0 : p.n;
  const int c_lo = product_col<kOp, kTileN>(t.col0, 2 * q, p.n);
  const int c_hi = product_col<kOp, kTileN>(t.col0, kTileN / 2 + 2 * q, p.n);
  const void* bias_lo = nullptr;
  const void* bias_hi = nullptr;
  if constexpr (kOp.bias) {
    // The zero tail's group has no bias row: its columns are all masked, and the pointers stay in the table.
    const long long base = t.tail ? 0 : static_cast<long long>(t.group) * p.op.bias_group_stride;
    bias_lo = bias_ptr<kOp.bias_type>(p.op.bias, base + c_lo);
    bias_hi = bias_ptr<kOp.bias_type>(p.op.bias, base + c_hi);
  }
  // The bias of the thread's two columns of the 8-column block starting at accumulator column j0.
  auto bias_pair = [&](int j0, float& b0, float& b1) {
    b0 = b1 = 0.0f;
    if constexpr (kOp.bias) {
      const bool hi = kOp.split_b() && j0 >= kTileN / 2;  // compile-time after unrolling
      const void* ptr = hi ? bias_hi : bias_lo;
      const int c = hi ? c_hi : c_lo, off = hi ? j0 - kTileN / 2 : j0;
      b0 = bias_at<kOp.bias_type>(ptr, off, c, bias_valid);
      b1 = bias_at<kOp.bias_type>(ptr, off + 1, c, bias_valid);
    }
  };
  auto value = [&](float x, float b) { return (t.no_k ? 0.0f : x) + b; };  // accumulators never written: zeros
  if constexpr (!kOp.gated()) {
#pragma unroll
    for (int j = 0; j < kTileN / 8; ++j) {
      float b0, b1;
      bias_pair(8 * j, b0, b1);
#pragma unroll
      for (int a = 0; a < kAtoms; ++a)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          acc[a][4 * j + 2 * h] = activate<kOp.act>(value(acc[a][4 * j + 2 * h], b0));
          acc[a][4 * j + 2 * h + 1] = activate<kOp.act>(value(acc[a][4 * j + 2 * h + 1], b1));
        }
    }
  } else if constexpr (kOp.gate == Gate::concatenated) {
    // Column j (< kTileN / 2) pairs with j + kTileN / 2: entry i with entry i + kTileN / 4.
#pragma unroll
    for (int j = 0; j < kTileN / 16; ++j) {
      float g0, g1, u0, u1;
      bias_pair(8 * j, g0, g1);
      bias_pair(8 * j + kTileN / 2, u0, u1);
#pragma unroll
      for (int a = 0; a < kAtoms; ++a)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int i = 4 * j + 2 * h;
          acc[a][i] = activate_gated<kOp.act>(value(acc[a][i], g0), value(acc[a][i + kLen / 2], u0), p.op);
          acc[a][i + 1] = activate_gated<kOp.act>(value(acc[a][i + 1], g1), value(acc[a][i + 1 + kLen / 2], u1), p.op);
        }
    }
  } else {
    // Interleaved: the thread's pair (2q, 2q+1) of block j is (gate, up) of out column 4j + q. Out's
    // 8-column block jo is blocks 2jo (columns 8jo + q) and 2jo + 1 (8jo + 4 + q) of the quad; lane q
    // needs out columns 8jo + 2q, + 1: from lanes 2q % 4 and 2q % 4 + 1, of block 2jo when q < 2,
    // else of block 2jo + 1. Two shuffles of each block's value per out pair.
    const int lane_lo = (2 * q) & 3;
#pragma unroll
    for (int jo = 0; jo < kTileN / 16; ++jo) {
      float w[2][kAtoms][2];  // blocks 2jo and 2jo + 1
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int j = 2 * jo + e;
        float bg, bu;
        bias_pair(8 * j, bg, bu);
#pragma unroll
        for (int a = 0; a < kAtoms; ++a)
#pragma unroll
          for (int h = 0; h < 2; ++h)
            w[e][a][h] = activate_gated<kOp.act>(value(acc[a][4 * j + 2 * h], bg), value(acc[a][4 * j + 2 * h + 1], bu), p.op);
      }
      // Out block jo's entries (4jo ..) lie at or below the blocks just read (8jo ..): written in place.
#pragma unroll
      for (int a = 0; a < kAtoms; ++a)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float lo_a = __shfl_sync(0xffffffffu, w[0][a][h], lane_lo, 4);
          const float lo_b = __shfl_sync(0xffffffffu, w[1][a][h], lane_lo, 4);
          const float hi_a = __shfl_sync(0xffffffffu, w[0][a][h], lane_lo + 1, 4);
          const float hi_b = __shfl_sync(0xffffffffu, w[1][a][h], lane_lo + 1, 4);
          acc[a][4 * jo + 2 * h] = q < 2 ? lo_a : lo_b;
          acc[a][4 * jo + 2 * h + 1] = q < 2 ? hi_a : hi_b;
        }
    }
  }
  if constexpr (kOp.row_scale) {
    constexpr int kOutLen = kOp.out_cols(kTileN) / 2;
    const int r_lo = t.row0 + (tid / 32) * 16 + (tid % 32) / 4;
#pragma unroll
    for (int a = 0; a < kAtoms; ++a)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        // Rows past the group's end are not stored (and may lie past the tensor); the zero tail's stay zeros.
        const int r = r_lo + 64 * a + 8 * h;
        const float s = r < t.row_end && !t.tail ? __ldg(p.op.row_scale + r) : 0.0f;
#pragma unroll
        for (int j = 0; j < kOutLen / 4; ++j) {
          acc[a][4 * j + 2 * h] *= s;
          acc[a][4 * j + 2 * h + 1] *= s;
        }
      }
  }
}

}  // namespace gemmops::kernels::sm90
