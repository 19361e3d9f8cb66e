// kernels/sm90/epilogue_op.cuh: the fused epilogue op (KernelConfig::op), applied to one warpgroup's
// fp32 accumulators element by element as a store mechanism converts and writes them:
// v = acc + bias[g, c] (the accumulators start from the bias); v = act(v) (gated: act(gate, up),
// half the columns); v *= row_scale[r].
// Every element stays in the thread that holds it but for the interleaved gate layout, whose pairs
// come from the quad's other lanes by shuffles. The identity op reads the accumulators as they are.
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
  int group;       // the problem's group (the bias row; the bias is added before the main loop)
  int live_atoms;  // 64-row atoms with rows to store
  int consumer;    // the warpgroup (its TMA staging and named barrier)
  bool no_k;       // no k-block summed: the product is zeros, the accumulators hold nothing
  bool tail;       // the zero tail (rows past the last group): zeros, no op
  ::cuda::std::uint64_t* h_bar = nullptr;  // KernelConfig::loads_h_by_tma: the warpgroup's h-load mbarrier
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
__device__ __forceinline__ float activate_gated(float gate, float up, const OpParams& op) {
  if constexpr (kAct == Act::swiglu) {
    return times_sigmoid(gate, gate) * up;
  } else {  // swiglu_oss (gpt-oss)
    const float g = fminf(gate, op.limit);
    const float u = fminf(fmaxf(up, -op.limit), op.limit);
    return (u + 1.0f) * times_sigmoid(g, op.alpha * g);
  }
}

/// The bias as fp32: p[i] when i < left (the columns of the bias from p on), else 0. The loads of a
/// thread's blocks take immediate offsets from one pointer.
template <ElemType kType>
__device__ __forceinline__ float bias_at(const void* p, int i, int left) {
  if (i >= left) return 0.0f;
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

/// The bias as the accumulators' start (kOp.bias): before a tile's main loop each thread sets its
/// accumulators to the bias of their columns, and the tile's first MMA adds to them instead of
/// overwriting them. The epilogue then holds no bias values or pointers (added in the epilogue they
/// spilled the 192-accumulator ping-pong kernels), and a tile without k-blocks holds exactly its
/// bias. The zero tail (no bias row) starts from zeros. Called by all 128 threads of a warpgroup.
template <EpilogueOp kOp, int kTileN, int kAtoms, int kLen>
__device__ __forceinline__ void start_from_bias(float (&acc)[kAtoms][kLen], const GroupedGemmParams& p, int col0,
                                                int group, bool tail) {
  static_assert(kOp.bias, "only kernels with a bias start from it");
  const int q = static_cast<int>(threadIdx.x % 4);
  // The bias at the thread's first column (loads take immediate offsets from it; the second half of
  // a tile loaded as halves is n / 2 product columns on), and the bias's columns from there.
  const int c_lo = epilogue_op::product_col<kOp, kTileN>(col0, 2 * q, p.scheduler.n);
  const long long base = tail ? 0 : static_cast<long long>(group) * p.op.bias_group_stride;
  const void* bias = epilogue_op::bias_ptr<kOp.bias_type>(p.op.bias, base + c_lo);
  const int left = tail ? 0 : p.scheduler.n - c_lo;
#pragma unroll
  for (int j = 0; j < kTileN / 8; ++j) {
    const int off = (kOp.split_b() && j >= kTileN / 16 ? p.scheduler.n / 2 - kTileN / 2 : 0) + 8 * j;
    const float b0 = epilogue_op::bias_at<kOp.bias_type>(bias, off, left);
    const float b1 = epilogue_op::bias_at<kOp.bias_type>(bias, off + 1, left);
#pragma unroll
    for (int a = 0; a < kAtoms; ++a)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        acc[a][4 * j + 2 * h] = b0;
        acc[a][4 * j + 2 * h + 1] = b1;
      }
  }
}

/// A warpgroup's kAtoms fragments of 64 x kTileN fp32 accumulators seen through kOp: entry i of atom
/// a of out's tile fragment, in the wgmma m64nNk16 layout (thread t holds, for each 8-column block j,
/// columns 8j + 2(t%4) + {0,1} of rows (t/32)*16 + (t%32)/4 in entries 4j, 4j+1 and those 8 rows
/// below in 4j+2, 4j+3), computed from the accumulators as the store asks for it: the store
/// mechanisms convert and write one 8-column block at a time, so the op's temporaries stay that
/// small and the accumulators are left as they are (the register pressure of storing them). Out's
/// tile has kOp.out_cols(kTileN) columns. The identity reads acc[a][i]. Made by all 128 threads.
template <EpilogueOp kOp, int kTileN, int kAtoms, int kLen>
struct OpFragment {
  static_assert(kLen == kTileN / 2, "one fp32 fragment of 64 x kTileN");
  const float (&acc)[kAtoms][kLen];
  const GroupedGemmParams& p;
  bool no_k;  // no k-block summed: without a bias start the registers hold nothing, the product is zeros
  int q;      // the thread's place in its quad
  // The row scale at the thread's first row, and the rows left in the group from there: an atom's
  // two scales are loaded when the store comes to it (a value per row held for the whole tile
  // spilled the 192-accumulator ping-pong kernels).
  const float* scale_at;
  int rows_left;

  __device__ __forceinline__ OpFragment(const float (&a)[kAtoms][kLen], const GroupedGemmParams& params,
                                        const TileContext& t)
      : acc(a), p(params), no_k(t.no_k) {
    if constexpr (!kOp.identity()) {
      const int tid = threadIdx.x % 128;
      q = tid % 4;
      if constexpr (kOp.row_scale) {
        const int r_lo = t.row0 + (tid / 32) * 16 + (tid % 32) / 4;
        scale_at = p.op.row_scale + r_lo;
        // Rows past the group's end are not stored (and may lie past the tensor). The zero tail's
        // product is zeros (every activation maps 0 to 0) and its scale zero: its rows stay zeros.
        rows_left = t.tail ? 0 : t.row_end - r_lo;
      }
    }
  }

  /// The row scale of atom a's row h (0: the thread's row, 1: 8 below); 1 without a row scale. A
  /// store loads an atom's two when it comes to the atom.
  __device__ __forceinline__ float row_scale(int a, int h) const {
    if constexpr (kOp.row_scale) {
      return 8 * h + 64 * a < rows_left ? __ldg(scale_at + 64 * a + 8 * h) : 0.0f;
    } else {
      return 1.0f;
    }
  }

  /// Entry i of atom a of out's fragment, fp32, with the row scale s of its row (row_scale(a, i / 2 % 2)).
  __device__ __forceinline__ float entry(int a, int i, float s) const {
    if constexpr (kOp.identity()) {
      return acc[a][i];
    } else {
      float v;
      if constexpr (!kOp.gated()) {
        v = epilogue_op::activate<kOp.act>(value(a, i));
      } else if constexpr (kOp.gate == Gate::concatenated) {
        // Column j (< kTileN / 2) pairs with j + kTileN / 2: entry i with entry i + kTileN / 4.
        v = epilogue_op::activate_gated<kOp.act>(value(a, i), value(a, i + kLen / 2), p.op);
      } else {
        v = interleaved(a, i);
      }
      if constexpr (kOp.row_scale) v *= s;
      return v;
    }
  }

 private:
  /// The product (plus the bias it started from): zero when no k-block was summed and nothing set
  /// the registers.
  __device__ __forceinline__ float value(int a, int i) const {
    if constexpr (kOp.bias) {
      return acc[a][i];
    } else {
      return no_k ? 0.0f : acc[a][i];
    }
  }

  // Interleaved gate layout: the thread's pair (2q, 2q+1) of block j is (gate, up) of out column
  // 4j + q. Out's 8-column block jo is blocks 2jo (columns 8jo + q) and 2jo + 1 (8jo + 4 + q) of the
  // quad; lane q needs out columns 8jo + 2q, + 1: from lanes 2q % 4 and 2q % 4 + 1, of block 2jo
  // when q < 2, else of block 2jo + 1. Two shuffles an entry (each pair's activation is computed once
  // for the entries of both its columns). The result is not written back: a lane-dependent choice
  // stored into the accumulators made ptxas serialise the next tile's wgmma (C7518).
  __device__ __forceinline__ float interleaved(int a, int i) const {
    const int jo = i / 4, h = (i / 2) % 2, e = i % 2;
    float w[2];
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int j = 2 * jo + k;
      w[k] = epilogue_op::activate_gated<kOp.act>(value(a, 4 * j + 2 * h), value(a, 4 * j + 2 * h + 1), p.op);
    }
    const int src = ((2 * q) & 3) + e;
    const float from_a = __shfl_sync(0xffffffffu, w[0], src, 4);
    const float from_b = __shfl_sync(0xffffffffu, w[1], src, 4);
    return q < 2 ? from_a : from_b;
  }
};

}  // namespace gemmops::kernels::sm90
