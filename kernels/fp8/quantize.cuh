// kernels/fp8/quantize.cuh: bf16/fp32 -> e4m3 with one fp32 scale per block (amax / 448), the host
// quantiser's arithmetic bit for bit (sm_89 and later: cvt.rn.satfinite.e4m3x2.f32)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda/std/cstdint>

#include "fp8/quantize_params.cuh"

namespace gemmops::kernels::fp8 {

using ::cuda::std::uint32_t;

inline constexpr float kE4m3Max = 448.0f;     // gemmops::kE4m3Max
inline constexpr float kMinAmax = 1e-4f;      // gemmops::kQuantizeMinAmax
inline constexpr uint32_t kInfBits = 0x7f800000u;
inline constexpr uint32_t kScaleNaN = 0x7fc00000u;   // the scale of a block holding a non-finite x
inline constexpr uint32_t kCodesNaN = 0x7f7f7f7fu;   // four e4m3 NaN codes: every code of that block

/// What one launch does: a fused kernel per granularity (amax, scale and codes of a tile at once),
/// or one of the four steps of tensor scales, whose amax spans many blocks: zero the scale slots,
/// atomicMax each tile's amax into them, quantise with it, turn each slot into the scale.
enum class Step : int { block_1x128 = 0, block_128x128, row, tensor_zero, tensor_amax, tensor_apply, tensor_scale };

/// 8 consecutive columns of one row as raw bits: fp32 one word each, bf16 two a word (the even
/// column in the low half). Columns past the row are 0.
template <Elem kIn>
struct Segment {
  static constexpr int kWords = kIn == Elem::fp32 ? kSegment : kSegment / 2;
  uint32_t w[kWords];

  /// Column i as fp32 bits (a bf16 is the top half of its fp32).
  __device__ __forceinline__ uint32_t bits(int i) const {
    if constexpr (kIn == Elem::fp32) {
      return w[i];
    } else {
      return (i & 1) != 0 ? (w[i / 2] & 0xffff0000u) : (w[i / 2] << 16);
    }
  }
  /// max |x| as fp32 bits. Unsigned order of the bits of |x| is the order of the magnitudes, with
  /// +inf above every finite value and NaN above +inf: one integer max finds the amax and whether
  /// the segment holds a non-finite value (>= kInfBits).
  __device__ __forceinline__ uint32_t abs_max() const {
    uint32_t m = 0;
#pragma unroll
    for (int i = 0; i < kSegment; ++i) m = max(m, bits(i) & 0x7fffffffu);
    return m;
  }
};

template <int kBytes>
__device__ __forceinline__ void load_words(const void* p, uint32_t* w) {
  if constexpr (kBytes == 16) {
    const uint4 u = __ldg(static_cast<const uint4*>(p));
    w[0] = u.x, w[1] = u.y, w[2] = u.z, w[3] = u.w;
  } else if constexpr (kBytes == 8) {
    const uint2 u = __ldg(static_cast<const uint2*>(p));
    w[0] = u.x, w[1] = u.y;
  } else {
    static_assert(kBytes == 4, "4-, 8- or 16-byte vectors");
    w[0] = __ldg(static_cast<const unsigned*>(p));
  }
}

/// Columns [c, c + 8) of the row at element offset `row` of x. kVec > 1: the host checked that
/// columns are contiguous, cols % kVec == 0 and every vector is aligned, so a vector is wholly in
/// or wholly past the row.
template <Elem kIn, int kVec>
__device__ __forceinline__ void load_segment(const QuantizeParams& p, int64_t row, int64_t c, Segment<kIn>& s) {
  constexpr int kSize = kIn == Elem::fp32 ? 4 : 2;
  const char* x = static_cast<const char*>(p.x);
  if constexpr (kVec == 1) {
#pragma unroll
    for (int i = 0; i < kSegment; ++i) {
      uint32_t b = 0;
      if (c + i < p.cols) {
        const char* e = x + (row + (c + i) * p.x_strides[2]) * kSize;
        b = kIn == Elem::fp32 ? __ldg(reinterpret_cast<const unsigned*>(e))
                              : __ldg(reinterpret_cast<const unsigned short*>(e));
      }
      if constexpr (kIn == Elem::fp32) {
        s.w[i] = b;
      } else {
        s.w[i / 2] = (i & 1) != 0 ? s.w[i / 2] | (b << 16) : b;
      }
    }
  } else {
    constexpr int kWordsPerVec = kVec * kSize / 4;
    static_assert(kWordsPerVec >= 1 && kWordsPerVec <= 4, "vectors of 4 to 16 bytes");
#pragma unroll
    for (int j = 0; j < kSegment / kVec; ++j) {
      if (c + j * kVec < p.cols) {
        load_words<kVec * kSize>(x + (row + c + j * kVec) * kSize, &s.w[j * kWordsPerVec]);
      } else {
#pragma unroll
        for (int i = 0; i < kWordsPerVec; ++i) s.w[j * kWordsPerVec + i] = 0;
      }
    }
  }
}

/// Codes of columns [c, c + 8) (8 bytes, little-endian in two words) to the row at element offset
/// `row` of q; columns past the row are not written.
template <int kVec>
__device__ __forceinline__ void store_codes(const QuantizeParams& p, int64_t row, int64_t c,
                                            const uint32_t (&codes)[2]) {
  unsigned char* q = p.q;
  if constexpr (kVec == 1) {
#pragma unroll
    for (int i = 0; i < kSegment; ++i) {
      if (c + i < p.cols) q[row + (c + i) * p.q_strides[2]] = static_cast<unsigned char>(codes[i / 4] >> (8 * (i % 4)));
    }
  } else {
#pragma unroll
    for (int j = 0; j < kSegment / kVec; ++j) {
      if (c + j * kVec >= p.cols) continue;
      unsigned char* at = q + row + c + j * kVec;
      if constexpr (kVec == 8) {
        *reinterpret_cast<uint2*>(at) = make_uint2(codes[0], codes[1]);
      } else if constexpr (kVec == 4) {
        *reinterpret_cast<unsigned*>(at) = codes[j];
      } else {
        static_assert(kVec == 2, "vectors of 1, 2, 4 or 8 codes");
        *reinterpret_cast<unsigned short*>(at) = static_cast<unsigned short>(codes[j / 2] >> (16 * (j % 2)));
      }
    }
  }
}

/// e4m3(lo) in the low byte, e4m3(hi) in the high byte: round to nearest even, saturating to +-448.
/// The quantiser's products never exceed 448 * (1 + 2^-22), which rounds to 448 with or without
/// saturation, so this matches the host's non-saturating conversion on every input it meets.
__device__ __forceinline__ uint32_t e4m3x2(float lo, float hi) {
  unsigned short r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
}

/// A block's scale and the factor its codes are taken with, from its amax bits.
struct BlockScale {
  float scale, inverse;
  bool poisoned;  // a non-finite x: NaN scale, NaN codes (the host refuses such an x instead)
};

__device__ __forceinline__ BlockScale block_scale(uint32_t amax_bits) {
  if (amax_bits >= kInfBits) return {__uint_as_float(kScaleNaN), 0.0f, true};
  const float amax = fmaxf(__uint_as_float(amax_bits), kMinAmax);
  return {__fdiv_rn(amax, kE4m3Max), __fdiv_rn(kE4m3Max, amax), false};
}

template <Elem kIn>
__device__ __forceinline__ void encode(const Segment<kIn>& s, const BlockScale& b, uint32_t (&codes)[2]) {
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const float v0 = __fmul_rn(__uint_as_float(s.bits(4 * k)), b.inverse);
    const float v1 = __fmul_rn(__uint_as_float(s.bits(4 * k + 1)), b.inverse);
    const float v2 = __fmul_rn(__uint_as_float(s.bits(4 * k + 2)), b.inverse);
    const float v3 = __fmul_rn(__uint_as_float(s.bits(4 * k + 3)), b.inverse);
    codes[k] = b.poisoned ? kCodesNaN : (e4m3x2(v0, v1) | (e4m3x2(v2, v3) << 16));
  }
}

/// The max over the 16 threads of one row (lanes that differ in their low 4 bits).
__device__ __forceinline__ uint32_t row_max(uint32_t m) {
#pragma unroll
  for (int offset = kThreadsPerRow / 2; offset > 0; offset /= 2) m = max(m, __shfl_xor_sync(0xffffffffu, m, offset));
  return m;
}

/// The max over the block; `smem` holds a word per warp and is free again on return.
__device__ __forceinline__ uint32_t block_max(uint32_t m, uint32_t* smem) {
  m = __reduce_max_sync(0xffffffffu, m);
  if (threadIdx.x % 32 == 0) smem[threadIdx.x / 32] = m;
  __syncthreads();
  uint32_t r = smem[0];
#pragma unroll
  for (int w = 1; w < kThreads / 32; ++w) r = max(r, smem[w]);
  __syncthreads();
  return r;
}

// ------------------------------------------------------------------------------------------------
// A tile held in registers: kPasses x 16 rows of 128 columns from (r0, c0) of instance `inst`.
// Row scope (block_1x128): each row its own scale. Tile scope: one amax for the tile, which is a
// 128x128 block's scale (fused), or a share of the instance's amax (tensor_amax); tensor_apply
// takes the instance's amax from the scale slot instead.
// ------------------------------------------------------------------------------------------------
template <Elem kIn, int kVec, int kPasses, Step kStep>
__device__ __forceinline__ void cached_tile(const QuantizeParams& p, int64_t inst, int64_t r0, int64_t c0,
                                            uint32_t* smem) {
  constexpr bool kRowScope = kStep == Step::block_1x128;
  const int slot = static_cast<int>(threadIdx.x) / kThreadsPerRow;
  const bool leader = static_cast<int>(threadIdx.x) % kThreadsPerRow == 0;
  const int64_t c = c0 + (static_cast<int>(threadIdx.x) % kThreadsPerRow) * kSegment;
  unsigned* slot_bits = reinterpret_cast<unsigned*>(p.scales + inst * p.s_strides[0]);
  Segment<kIn> seg[kPasses];       // (kPasses) x 8 columns of this thread's rows
  uint32_t amax[kRowScope ? kPasses : 1] = {};
#pragma unroll
  for (int pass = 0; pass < kPasses; ++pass) {
    const int64_t row = r0 + pass * kRowsPerPass + slot;
    if (row < p.rows) {
      load_segment<kIn, kVec>(p, inst * p.x_strides[0] + row * p.x_strides[1], c, seg[pass]);
    } else {
#pragma unroll
      for (int i = 0; i < Segment<kIn>::kWords; ++i) seg[pass].w[i] = 0;
    }
    if constexpr (kStep != Step::tensor_apply) {
      const uint32_t m = seg[pass].abs_max();
      amax[kRowScope ? pass : 0] = max(amax[kRowScope ? pass : 0], m);
    }
  }
  if constexpr (kRowScope) {
#pragma unroll
    for (int pass = 0; pass < kPasses; ++pass) amax[pass] = row_max(amax[pass]);
  } else if constexpr (kStep == Step::tensor_apply) {
    amax[0] = *slot_bits;  // written by tensor_amax, an earlier launch on the stream
  } else {
    amax[0] = block_max(amax[0], smem);
  }
  if constexpr (kStep == Step::tensor_amax) {
    if (threadIdx.x == 0) atomicMax(slot_bits, amax[0]);
    return;
  } else {
    const BlockScale tile = block_scale(amax[0]);
    if (kStep == Step::block_128x128 && threadIdx.x == 0) {
      p.scales[inst * p.s_strides[0] + (r0 / kBlockCols) * p.s_strides[1] + (c0 / kBlockCols) * p.s_strides[2]] =
          tile.scale;
    }
#pragma unroll
    for (int pass = 0; pass < kPasses; ++pass) {
      const int64_t row = r0 + pass * kRowsPerPass + slot;
      if (row >= p.rows) continue;
      const BlockScale b = kRowScope ? block_scale(amax[kRowScope ? pass : 0]) : tile;
      if (kRowScope && leader) {
        p.scales[inst * p.s_strides[0] + row * p.s_strides[1] + (c0 / kBlockCols) * p.s_strides[2]] = b.scale;
      }
      uint32_t codes[2];
      encode<kIn>(seg[pass], b, codes);
      store_codes<kVec>(p, inst * p.q_strides[0] + row * p.q_strides[1], c, codes);
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Row scales: 16 rows from r0, each read twice along all of its columns by its 16 threads (amax,
// then codes; the second read mostly hits L1/L2). A row longer than registers hold needs no limit.
// ------------------------------------------------------------------------------------------------
template <Elem kIn, int kVec>
__device__ __forceinline__ void row_strip(const QuantizeParams& p, int64_t inst, int64_t r0) {
  const int64_t row = r0 + static_cast<int>(threadIdx.x) / kThreadsPerRow;
  const int64_t first = (static_cast<int>(threadIdx.x) % kThreadsPerRow) * kSegment;
  const bool in = row < p.rows;
  const int64_t x_row = inst * p.x_strides[0] + row * p.x_strides[1];
  uint32_t m = 0;
  for (int64_t c = first; in && c < p.cols; c += kBlockCols) {
    Segment<kIn> s;
    load_segment<kIn, kVec>(p, x_row, c, s);
    m = max(m, s.abs_max());
  }
  const BlockScale b = block_scale(row_max(m));
  if (!in) return;
  if (first == 0) p.scales[inst * p.s_strides[0] + row * p.s_strides[1]] = b.scale;
  for (int64_t c = first; c < p.cols; c += kBlockCols) {
    Segment<kIn> s;
    load_segment<kIn, kVec>(p, x_row, c, s);
    uint32_t codes[2];
    encode<kIn>(s, b, codes);
    store_codes<kVec>(p, inst * p.q_strides[0] + row * p.q_strides[1], c, codes);
  }
}

/// One launch of `kStep` over p.tiles tiles (grid-strided; the tensor_zero and tensor_scale steps
/// over p.instances scale slots instead). Each tile's bits depend on its elements only, never on the
/// launch shape; the tensor amax is an integer max, so the order of the atomics does not matter.
template <Elem kIn, int kVec, Step kStep>
__global__ void __launch_bounds__(kThreads) quantize_kernel(const QuantizeParams p) {
  __shared__ uint32_t smem[kThreads / 32];
  if constexpr (kStep == Step::tensor_zero || kStep == Step::tensor_scale) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
    for (int64_t i = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x; i < p.instances; i += stride) {
      unsigned* slot = reinterpret_cast<unsigned*>(p.scales + i * p.s_strides[0]);
      *slot = kStep == Step::tensor_zero ? 0u : __float_as_uint(block_scale(*slot).scale);
    }
  } else {
    for (int64_t t = blockIdx.x; t < p.tiles; t += gridDim.x) {
      const int64_t ct = t % p.col_tiles, rt = (t / p.col_tiles) % p.row_tiles, inst = t / p.col_tiles / p.row_tiles;
      if constexpr (kStep == Step::row) {
        row_strip<kIn, kVec>(p, inst, rt * kRowsPerPass);
      } else if constexpr (kStep == Step::block_1x128) {
        cached_tile<kIn, kVec, kRowTileRows / kRowsPerPass, kStep>(p, inst, rt * kRowTileRows, ct * kBlockCols, smem);
      } else {
        cached_tile<kIn, kVec, kBlockTileRows / kRowsPerPass, kStep>(p, inst, rt * kBlockTileRows, ct * kBlockCols,
                                                                      smem);
      }
    }
  }
}

}  // namespace gemmops::kernels::fp8
