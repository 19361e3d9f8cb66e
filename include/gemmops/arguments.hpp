// include/gemmops/arguments.hpp: the operations gemmops serves, as argument structs, and their validation
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <variant>

#include "gemmops/epilogue.hpp"
#include "gemmops/scaling.hpp"
#include "gemmops/status.hpp"
#include "gemmops/tensor.hpp"

namespace gemmops {

/// Dense GEMM out = A x B:
///   (M,K) x (K,N) -> (M,N)                 OperationKind::gemm
///   (L,M,K) x (L,K,N) -> (L,M,N)           OperationKind::batched_gemm
/// Every operand may use any strides (K-major or MN-major A and B); out is written, never read.
struct GemmArguments {
  TensorDesc A, B, out;
  DType accumulator = DType::fp32;
  /// Bias, activation and row scale applied before the store (epilogue.hpp); out's last
  /// dimension is N / 2 with a gated activation.
  EpilogueOps epilogue;
  /// fp8 A and B only: their scales (scaling.hpp). out = convert(sum_k (A[r,k] sa(r,k)) (B[k,c] sb(k,c)))
  /// in fp32; an fp8 operand without scales has scale 1.
  std::optional<OperandScales> a_scales, b_scales;
};

/// Grouped GEMM with int32 `offsets` (G,) of exclusive end positions; group i covers
/// [offsets[i-1], offsets[i]) (start 0 for i = 0); empty groups are legal.
///   M-grouped (contiguous offsets): A (TotalM,K) x B (G,K,N) -> out (TotalM,N). Rows of out at or
///     past offsets[G-1] are left untouched, or set to zero with `zero_tail`. OperationKind::grouped_m
///   K-grouped (weight gradients):   A (M,TotalK) x B (TotalK,N) -> out (G,M,N); group i sums over
///     its K range; an empty group writes zeros.                    OperationKind::grouped_k
///   N-grouped:                      A (G,M,K) x B (K,TotalN) -> out (M,TotalN); group i computes
///     the columns of its N range, out[:, cols] = A[i] x B[:, cols]. Columns of out at or past
///     offsets[G-1] are left untouched, or set to zero with `zero_tail`. OperationKind::grouped_n
///   Masked M-grouped (an expert-parallel dispatcher's decode layout, e.g. DeepEP's low-latency
///     path): A (G,MaxM,K) x B (G,K,N) -> out (G,MaxM,N); offsets (G,) hold each group's valid row
///     count: group i covers rows [0, offsets[i]) of A[i] and out[i]; out[i]'s other rows are left
///     untouched. Counts are clamped to [0, MaxM] on the device. OperationKind::grouped_m_masked
/// The form follows from the ranks: B of rank 3 is M-grouped, out of rank 3 is K-grouped, A of
/// rank 3 is N-grouped (torch.nn.functional.grouped_mm's 2d x 3d, 2d x 2d and 3d x 2d), all three of
/// rank 3 the masked M-grouped form.
struct GroupedGemmArguments {
  TensorDesc A, B, out;
  DType accumulator = DType::fp32;
  TensorDesc offsets;
  /// M-grouped: also write zeros to out's rows at or past offsets[G-1]; N-grouped: to its columns
  /// at or past offsets[G-1] (what a framework op that returns a fresh tensor needs), in the same
  /// launch instead of a separate fill of all of out. The K-grouped form writes every element of
  /// out and ignores it.
  bool zero_tail = false;
  /// M-grouped only: group i starts at offsets[i-1] rounded up to a multiple of this (a power of
  /// two; 1: right after the previous group). The rows in between (an expert-parallel dispatcher's
  /// aligned prefix sums pad each group) are neither read nor written, nor zeroed by `zero_tail`.
  int32_t group_alignment = 1;
  /// M-grouped only: bias, activation and row scale applied before the store (epilogue.hpp);
  /// out is (TotalM, N / 2) with a gated activation.
  EpilogueOps epilogue;
  /// fp8 A and B only: their scales (scaling.hpp), as for GemmArguments. M-grouped block_1x128 A
  /// scales are per row, so groups need no 128-row alignment; K-grouped block scales run along the
  /// global K, and a block straddling two groups shares its scale (docs/fp8.md).
  std::optional<OperandScales> a_scales, b_scales;
  /// M-grouped only: A's rows read through an index (a gathered A, e.g. a MoE layer's tokens read
  /// once per (token, choice) pair without writing the gathered copy): row r of the product's A is
  /// A[a_row_index[r], :]. int32, (TotalM,), contiguous, on A's device; A is then (Rows, K) for
  /// any Rows and TotalM is out's rows. Index values must be in [0, Rows) (checked by validate()
  /// when the index lives on the host); entries at or past offsets[G-1] (and padding rows between
  /// aligned groups) are never read. Operators that do not serve it refuse it in supports().
  std::optional<TensorDesc> a_row_index;
  /// K-grouped only: A's columns and B's rows read through an index along K (gathered operands,
  /// e.g. a MoE layer's weight gradients summing over each expert's (token, choice) pairs without
  /// writing the tokens' gathered copy). Column k of the product's A is A[:, a_k_index[k]], row k
  /// of its B is B[b_k_index[k], :]; either, both (the same tensor or two) or neither may be given.
  /// A gathered A is then (M, Rows) and a gathered B (Rows, N) for any Rows (the source: an M-major
  /// A is the transpose of a row-major (Rows, M) tensor); TotalK is the index's length. Each is
  /// int32, (TotalK,), contiguous, on its operand's device, with values in [0, Rows) (checked by
  /// validate() when the index lives on the host); entries at or past offsets[G-1] are never read.
  /// Operators that do not serve them refuse them in supports().
  std::optional<TensorDesc> a_k_index, b_k_index;
};

using Arguments = std::variant<GemmArguments, GroupedGemmArguments>;

enum class OperationKind { gemm, batched_gemm, grouped_m, grouped_k, grouped_n, grouped_m_masked };
inline constexpr OperationKind kAllOperationKinds[] = {OperationKind::gemm,      OperationKind::batched_gemm,
                                                       OperationKind::grouped_m, OperationKind::grouped_k,
                                                       OperationKind::grouped_n, OperationKind::grouped_m_masked};
/// "gemm", "batched_gemm", "grouped_gemm_m", "grouped_gemm_k", "grouped_gemm_n", "grouped_gemm_m_masked".
std::string_view name(OperationKind k);

/// The sizes of a problem, after validation. For grouped_m, `m` is TotalM (out's rows; A's rows
/// unless a_row_index gathers them) and `groups`
/// is G; for grouped_k, `k` is TotalK; for grouped_n, `m` is M, `n` is TotalN (B's columns), `k`
/// is K and `groups` is G (A's first dimension); for grouped_m_masked, `m` is G * MaxM (A's rows,
/// padding included) and `groups` is G; for batched_gemm, `groups` is L; for gemm, `groups` is 1.
struct ProblemShape {
  OperationKind kind = OperationKind::gemm;
  int64_t m = 0, n = 0, k = 0, groups = 1;
  /// 2*m*n*k: the FLOPs of the whole problem (each row, column or K slice belongs to one group),
  /// counting rows (columns) past offsets[G-1] as covered, since the offsets may not be known on
  /// the host.
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
};

/// The operation kind of `args` from operand ranks; invalid_argument when the ranks fit no form.
Result<OperationKind> operation_kind(const Arguments& args);

/// Every structural rule of the operation: ranks, shape agreement, dtype combination, accumulator,
/// devices, offsets dtype/rank/length, non-negative strides, out aliasing an input, the epilogue
/// ops (forms that take them, the gated column rule, bias and row_scale, alpha and limit), and —
/// when the offsets live on the host and carry data — offsets that decrease or exceed their bound.
/// Rules an operator adds (alignment, majors) are checked by Operator::supports.
/// Returns invalid_argument with a message naming the operand and the rule; never aborts.
Status validate(const Arguments& args);
/// validate() without the rules on what may differ between calls of one layout (out overlapping an
/// input, the epilogue's alpha and limit): what every pair of arguments with the same dtypes, shapes,
/// strides and epilogue ops shares.
Status validate_structure(const Arguments& args);

/// validate(), then the problem sizes.
Result<ProblemShape> problem_shape(const Arguments& args);

/// Major of A (rows = M, cols = K) and B (rows = K, cols = N) of valid arguments; false when the
/// operand has neither its last nor its second-to-last dimension contiguous.
bool a_major(const Arguments& args, Major* major);
bool b_major(const Arguments& args, Major* major);

/// Accessors common to both argument types.
const TensorDesc& operand_a(const Arguments& args);
const TensorDesc& operand_b(const Arguments& args);
const TensorDesc& operand_out(const Arguments& args);
DType accumulator_of(const Arguments& args);
const EpilogueOps& epilogue_of(const Arguments& args);

}  // namespace gemmops
