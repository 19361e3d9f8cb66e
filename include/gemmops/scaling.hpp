// include/gemmops/scaling.hpp: how an fp8 operand is scaled (granularity, scale tensor layout), and the
// host quantisation helpers that produce such operands
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string_view>
#include <vector>

#include "gemmops/status.hpp"
#include "gemmops/tensor.hpp"

namespace gemmops {

/// How many elements of an fp8 operand share one fp32 scale. The operand is seen as a matrix of
/// MN x K per instance: A's rows are its MN (M, TotalM), B's columns are its MN (N, TotalN); a
/// stacked operand (batched A or B, M-grouped B, N-grouped A) has one matrix per instance.
enum class ScaleGranularity : int {
  tensor = 0,     ///< one scale per matrix (per instance)
  row,            ///< one per row of A / column of B over all of K (torch _scaled_mm "rowwise")
  block_1x128,    ///< one per row of A / column of B per 128 K (DeepGEMM's activations)
  block_128x128,  ///< one per 128 MN x 128 K block (DeepGEMM's weights)
};
inline constexpr ScaleGranularity kAllScaleGranularities[] = {
    ScaleGranularity::tensor, ScaleGranularity::row, ScaleGranularity::block_1x128,
    ScaleGranularity::block_128x128};
/// "tensor", "row", "block_1x128", "block_128x128".
std::string_view name(ScaleGranularity g);

/// Which dimension of a block scale tensor is contiguous (docs/fp8.md draws both). The logical
/// shape is the same in both, K blocks last: (..., MN or MN blocks, ceil(K/128)).
///   k_major:  K blocks contiguous: strides (..., >= KB, 1), row-major as a framework allocates it.
///   mn_major: MN contiguous:       strides (..., 1, >= MN), the transposed form DeepGEMM's TMA
///             reads, where the stride of the K-block dimension is MN padded to 4 (16 bytes).
/// Tensor and row scales have no K-block dimension and take k_major (the default) only.
enum class ScaleLayout : int { k_major = 0, mn_major };
inline constexpr ScaleLayout kAllScaleLayouts[] = {ScaleLayout::k_major, ScaleLayout::mn_major};
/// "k_major", "mn_major".
std::string_view name(ScaleLayout l);

/// The scales of one fp8 operand (A or B): fp32, on the operand's device, fake allowed.
/// The expected shape, with KB = ceil(K/128) and a leading instance dimension only where the
/// operand is stacked (L or G instances):
///   tensor         (L,) / (G,) stacked, (1,) otherwise
///   row            ([L|G,] MN)
///   block_1x128    ([L|G,] MN, KB)
///   block_128x128  ([L|G,] ceil(MN/128), KB)
/// The K-grouped form (A (M,TotalK) x B (TotalK,N)) splits K into groups: tensor and row scales,
/// which cover all of a group's K, are per group, (G,) and (G, MN); block scales run along the
/// global K, (MN, ceil(TotalK/128)) and (ceil(MN/128), ceil(TotalK/128)), and a 128-block that
/// straddles two groups has one scale, used by both groups for their part of it.
/// Block scales of a partial last block (K not a multiple of 128) cover only the K that exists.
struct OperandScales {
  TensorDesc scales;
  ScaleGranularity granularity = ScaleGranularity::block_1x128;
  ScaleLayout layout = ScaleLayout::k_major;
};

/// The granularities and layouts an operator serves (OperandConstraints::scalings). Unlike the
/// lists of OperandConstraints, an empty list here means none: an operator that says nothing
/// refuses scaled operands.
struct ScalingSupport {
  std::vector<ScaleGranularity> a, b;  ///< served for a_scales and b_scales
  std::vector<ScaleLayout> layouts;    ///< served for block scales (tensor and row have one)
  /// Every granularity on both operands, in both layouts (the CPU operators).
  static ScalingSupport all();
};

/// The fp8 value's largest magnitude a quantiser maps a block's amax to (e4m3's largest finite).
inline constexpr float kE4m3Max = 448.0f;
/// The smallest amax a quantiser divides by, so that an all-zero block gets a finite scale.
inline constexpr float kQuantizeMinAmax = 1e-4f;

/// Quantises the matrix `x` (R, C) or stack (L, R, C) of bf16 or fp32 into e4m3 `q` (x's shape,
/// any strides whose elements do not overlap) and fp32 `scales.scales` (shape and layout as
/// OperandScales says for an operand with MN = R, K = C, stacked when x has rank 3), per
/// `scales.granularity`, in blocks along C, as DeepGEMM's per_token_cast_to_fp8 (block_1x128)
/// and per_block_cast_to_fp8 (block_128x128):
///   amax = max(max |x| over the block, kQuantizeMinAmax)      (fp32)
///   scale = amax / 448                                         (fp32, correctly rounded)
///   q = e4m3(x * (448 / amax))   (the product in fp32, then round to nearest even; |q| <= 448)
/// so q * scale is x within e4m3's half step (2^-4 relative for normals). To quantise B (K, N)
/// along K, pass its transposed views (N, K): x = B^T, q = Bq^T.
///
/// The three tensors live on one device. On the host the work is a loop on the calling thread. On
/// a CUDA device (compute capability 8.9 or later) it is launched on `stream` (one kernel; four
/// small ones for tensor scales) with no host synchronisation, compiled on first use for the
/// device's architecture, and its q and scales equal the host's bit for bit. Contiguous columns
/// are read 16 bytes at a time; strided columns (x = B^T) one element at a time.
///
/// Non-finite x: the host returns invalid_argument naming the first such element (blocks before
/// it are written). A device cannot refuse without a host synchronisation, so there a block that
/// holds a NaN or an infinity gets a NaN scale (0x7fc00000) and NaN codes (0x7f) for all of its
/// elements: its dequantised values are NaN, so the GEMM outputs that read it are NaN, never a
/// plausible number; the other blocks are as on the host.
///
/// invalid_argument for bad dtypes, shapes, layouts, devices, a fake tensor with elements, a CUDA
/// x or scales not aligned to their element size, or a non-finite x on the host; on a device also
/// no_device, unsupported (compute capability below 8.9), compile_failed and driver_error.
Status quantize_fp8(const TensorDesc& x, const TensorDesc& q, const OperandScales& scales, Stream stream = nullptr);

/// The expected shape of `granularity` scales of a matrix MN x K per instance (`instances` < 0:
/// not stacked), as OperandScales documents: for sizing the buffers quantize_fp8 fills.
std::vector<int64_t> scale_shape(ScaleGranularity granularity, int64_t instances, int64_t mn, int64_t k);

}  // namespace gemmops
