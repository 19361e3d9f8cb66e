// src/arguments/rules.hpp: the validation rules, one small named function each (used by validate())
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <string_view>

#include "gemmops/arguments.hpp"

namespace gemmops::detail {

// --- one tensor (validate_tensor.cpp) ---
/// Rank 1..3 for A, B and out.
Status validate_rank(const TensorDesc& t, std::string_view role);
/// One stride per dimension.
Status validate_stride_count(const TensorDesc& t, std::string_view role);
Status validate_sizes_non_negative(const TensorDesc& t, std::string_view role);
Status validate_strides_non_negative(const TensorDesc& t, std::string_view role);
/// The byte span (and the element count) must fit in int64.
Status validate_span_fits(const TensorDesc& t, std::string_view role);
/// A and B: bf16, fp16, fp32, e4m3, e5m2. out: bf16, fp16, fp32. int32 gets its own message.
Status validate_input_dtype(const TensorDesc& t, std::string_view role);
Status validate_out_dtype(const TensorDesc& out);
/// All of the layout rules above (stride count, sizes, strides, span) for any operand.
Status validate_layout(const TensorDesc& t, std::string_view role);
/// Element i of a contiguous host int32 tensor (offsets, an index), with no alignment assumed.
int32_t host_i32(const TensorDesc& t, int64_t i);
/// An index vector read by kernels: int32 with shape `dims` = (want,) (want < 0: any length; the
/// message says `want_is`), its layout, contiguous, on `operand`'s device.
Status validate_index_vector(const TensorDesc& idx, const TensorDesc& operand, std::string_view role,
                             std::string_view dims, int64_t want, std::string_view want_is);

// --- rules every operation shares (validate_common.cpp) ---
Status validate_ab_dtypes(const TensorDesc& a, const TensorDesc& b);
Status validate_accumulator(DType accumulator);
Status validate_same_device(const TensorDesc& a, const TensorDesc& t, std::string_view role);
/// out's byte range must not intersect `t`'s (only checked when both carry data).
Status validate_no_overlap(const TensorDesc& out, const TensorDesc& t, std::string_view role);
/// out overlaps none of the inputs: the one rule that reads the data pointers beyond their
/// alignment, so it is checked on every call while the others are answered once per signature.
Status validate_memory(const Arguments& args);
/// No two elements of out share an address (a zero stride on a dim of size > 1, or interleaving).
Status validate_out_elements_distinct(const TensorDesc& out);
/// The checks on A, B and out that do not depend on the operation's form (nor on where they point).
Status validate_operands(const TensorDesc& a, const TensorDesc& b, const TensorDesc& out, DType accumulator);
/// The rules on what may differ between arguments of one signature, checked on every call: where
/// the data points (validate_memory) and the epilogue's scalars (validate_epilogue_scalars).
Status validate_per_call(const Arguments& args);

// --- epilogue ops (validate_epilogue.cpp) ---
/// The K- and N-grouped forms take no epilogue ops.
Status validate_epilogue_form(const EpilogueOps& e, OperationKind kind);
/// out's N against the product's (B's) N: equal, or half of an even N with a gated activation.
Status validate_out_columns(const EpilogueOps& e, int64_t out_n, int64_t product_n, const std::string& shapes);
/// bias and row_scale: layout, shape for the form, dtype, contiguity, out's device.
Status validate_epilogue_operands(const EpilogueOps& e, OperationKind kind, const TensorDesc& B,
                                  const TensorDesc& out);
/// pre_activation and activation_grad (validate_epilogue_outputs.cpp): M-grouped only, the ops they
/// need, each tensor's shape, dtype, contiguity and device.
Status validate_second_operands(const EpilogueOps& e, OperationKind kind, const TensorDesc& B,
                                const TensorDesc& out);
/// out overlaps none of the second operands (checked on every call, like validate_memory).
Status validate_second_operands_memory(const EpilogueOps& e, const TensorDesc& out);
/// swiglu_oss: alpha finite, limit finite and > 0 (per-call values: not in the signature).
Status validate_epilogue_scalars(const EpilogueOps& e);

// --- dense and batched GEMM (validate_gemm.cpp) ---
Result<OperationKind> gemm_kind(const GemmArguments& args);
Status validate_gemm(const GemmArguments& args);

// --- grouped GEMM (validate_grouped.cpp) ---
Result<OperationKind> grouped_kind(const GroupedGemmArguments& args);
Status validate_grouped(const GroupedGemmArguments& args);
/// a_row_index (M-grouped only): int32 (TotalM,), contiguous, on A's device, host values that a
/// group reads in [0, A's rows) (validate_row_index.cpp).
Status validate_a_row_index(const GroupedGemmArguments& args, OperationKind kind);
/// a_k_index / b_k_index (K-grouped only): int32 (TotalK,), contiguous, on their operand's device
/// (validate_k_index.cpp).
Status validate_k_indices(const GroupedGemmArguments& args, OperationKind kind);
/// Their host values, after the offsets were validated.
Status validate_k_index_values(const GroupedGemmArguments& args);
/// The K-grouped form's TotalK: a K index's length when one gathers, else A's columns.
int64_t total_k(const GroupedGemmArguments& args);
/// Offsets (G,) int32, contiguous, on A's device, with host values in order and within `total`.
Status validate_offsets(const GroupedGemmArguments& args, int64_t groups, int64_t total,
                        std::string_view total_name);

// --- fp8 scales (validate_scales.cpp) ---
/// a_scales and b_scales: fp8 operand, fp32, shape per granularity and form, strides per layout,
/// on A's device. Called last by validate_gemm and validate_grouped, on otherwise valid arguments.
Status validate_scales(const Arguments& args);
struct OperandGeometry;
/// The rules on one scale tensor of `operand` seen through `g` (dtype, layout, shape, strides per
/// layout); `role` starts the message. Also used by the quantiser on its output scales.
Status validate_scales_tensor(const OperandScales& s, const OperandGeometry& g, const TensorDesc& operand,
                              const char* role);
/// out overlaps neither scale tensor (part of validate_memory).
Status validate_scales_memory(const Arguments& args);

// --- message helpers (validate_tensor.cpp) ---
/// "(8192, 2048)".
std::string tuple_string(const int64_t* v, std::size_t n);
/// "A (M,K) = (8192, 2048)": an operand, its dimension names and its shape.
std::string labelled(const char* role, const char* dims, const TensorDesc& t);
/// `role`'s dimension `what` (value `got`) must equal `ref`'s (value `want`); `shapes` ends the message.
Status agree(const char* what, int64_t got, int64_t want, const char* role, const char* ref,
             const std::string& shapes);

}  // namespace gemmops::detail
