// include/gemmops/moe.hpp: the MoE layer's own steps beside its grouped GEMMs: the routing (the
// (token, choice) pairs sorted by expert) and the combine (gather-reduce: each token's k expert rows,
// weighted by its routing scores, summed in a fixed order)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "gemmops/operator.hpp"
#include "gemmops/status.hpp"
#include "gemmops/tensor.hpp"

namespace gemmops {

/// out[t, :] = sum over j = 0 .. k-1, in that order, of scores[t, j] * rows[pair_rows[t, j], :]
/// (a score of 1 without `scores`), each column summed in fp32 by one fused multiply-add per choice
/// and rounded once to out's dtype. The bits depend on the inputs only (no atomics, no launch-shape
/// dependence): the forward of a MoE layer (o[t] = sum of s x y over t's pairs) and its backward
/// (dx[t] = sum of the pairs' dx rows). A choice whose row is negative, at or past rows.size(0), or
/// at or past *row_limit adds nothing (expert-parallel sentinels: a token without rows gets zeros).
struct GatherReduceArguments {
  /// (S, H) bf16, fp16 or fp32; columns contiguous, any row stride.
  TensorDesc rows;
  /// (T, k) int32, contiguous, on rows' device: the row of each (token, choice).
  TensorDesc pair_rows;
  /// (T, k) fp32, contiguous, on rows' device; none: every score is 1.
  std::optional<TensorDesc> scores;
  /// One int32 element on rows' device, read by the kernel (no host synchronisation): rows at or
  /// past its value are not read, e.g. a grouped GEMM's offsets[G-1] past which its out holds no
  /// group's rows. None: every row of `rows` may be read.
  std::optional<TensorDesc> row_limit;
  /// (T, H) bf16, fp16 or fp32; columns contiguous, any row stride; must not overlap the inputs.
  TensorDesc out;
};

/// The rules of the arguments: dtypes, shapes, strides, devices and overlap, each failure naming the
/// operand and the rule (invalid_argument). Fake tensors pass (the shapes are checked).
Status validate(const GatherReduceArguments& args);

/// Computes out (see GatherReduceArguments). On the host when the tensors are on the host; on a
/// CUDA device (compute capability 8.0 or later) as one kernel launched on `stream`, compiled on
/// first use for the device's architecture, with no host synchronisation (CUDA-graph safe).
Status gather_reduce(const GatherReduceArguments& args, Stream stream = nullptr);

/// The routing of a MoE layer: the T x k (token, choice) pairs, flattened in (token, choice) order,
/// sorted by expert, stably (pairs of one expert keep that order), as a grouped GEMM over the experts
/// reads them. Pair i = t k + j goes to row pair[i]; row r holds token[r]'s pair; offsets[e] is the
/// exclusive end of expert e's rows. Pairs whose id lies outside [0, num_experts) (expert-parallel
/// sentinels) sort last, past offsets[num_experts - 1]. With scores, sorted_scores[r] is the score of
/// row r's pair. The bits depend on the ids only (no atomics decide a row).
struct RouteArguments {
  /// (T, k) int32, contiguous: each pair's expert.
  TensorDesc topk_ids;
  /// E, 1 .. 8192.
  int num_experts = 0;
  /// (E,) int32 out.
  TensorDesc offsets;
  /// (T k,) int32 out: each sorted row's token.
  TensorDesc token;
  /// (T, k) int32 out, contiguous: each pair's sorted row.
  TensorDesc pair;
  /// (T, k) fp32, contiguous, and (T k,) fp32 out: both or neither.
  std::optional<TensorDesc> scores;
  std::optional<TensorDesc> sorted_scores;
};

/// The rules of RouteArguments (dtypes, shapes, devices, contiguity, overlap), each failure naming
/// the operand and the rule. Fake tensors pass (the shapes are checked).
Status validate(const RouteArguments& args);

/// Bytes of device workspace route() needs for `pairs` = T k pairs over `num_experts` experts (a
/// count per 4096 pairs and expert); 0 on the host.
std::size_t route_workspace_size(std::int64_t pairs, int num_experts);

/// Fills offsets, token, pair (and sorted_scores) from topk_ids (and scores). On the host when the
/// tensors are; on a CUDA device (compute capability 8.0 or later) as three kernels on `stream`, no
/// host synchronisation (CUDA-graph safe), with `workspace` of route_workspace_size() bytes.
Status route(const RouteArguments& args, Stream stream = nullptr, Workspace workspace = {});

/// A MoE router's choice (softmax scoring): per token t, p = softmax(logits[t, :]) in fp32; the k
/// experts of largest p + selection_bias, in that order (a tie: the lower id); topk_weights = p at
/// them, divided by their sum when `renormalize` (Qwen3's norm_topk_prob; Mixtral's softmax over the
/// top-k logits is the same). One kernel, a warp a token: no sort and no (T, E) probabilities
/// written. The bias moves the choice only (DeepSeek-V3's load balancing; a benchmark's forced
/// routing), never the weights.
struct RouterTopkArguments {
  /// (T, E) bf16, fp16 or fp32, columns contiguous, any row stride; E 1 .. 1024.
  TensorDesc logits;
  /// 1 .. min(E, 32).
  int k = 0;
  bool renormalize = false;
  /// fp32 (E,) or (T, E) with contiguous columns, on logits' device; none: no bias.
  std::optional<TensorDesc> selection_bias;
  /// (T, k) int32 out, contiguous.
  TensorDesc topk_ids;
  /// (T, k) fp32 out, contiguous.
  TensorDesc topk_weights;
};
/// The rules of RouterTopkArguments, each failure naming the operand and the rule. Fake tensors pass.
Status validate(const RouterTopkArguments& args);
/// Fills topk_ids and topk_weights. On the host when logits are; on a CUDA device (compute capability
/// 8.0 or later) as one kernel on `stream`, no host synchronisation (CUDA-graph safe).
Status router_topk(const RouterTopkArguments& args, Stream stream = nullptr);

/// The backward of router_topk: grad_logits[t] = p * (g - sum(p g)), g the gradient at p of the
/// weights (grad_topk_weights at the chosen experts; with renormalize, through the division by their
/// sum), p recomputed from the logits. Ids outside [0, E) (expert-parallel sentinels) add nothing; a
/// repeated id sums its choices' gradients, in choice order.
struct RouterTopkBackwardArguments {
  TensorDesc logits;             ///< as the forward was given
  TensorDesc topk_ids;           ///< (T, k) int32, contiguous: the forward's choice
  TensorDesc grad_topk_weights;  ///< (T, k) fp32, contiguous
  bool renormalize = false;
  TensorDesc grad_logits;        ///< (T, E) out, logits' dtype, columns contiguous, any row stride
};
Status validate(const RouterTopkBackwardArguments& args);
Status router_topk_backward(const RouterTopkBackwardArguments& args, Stream stream = nullptr);
}  // namespace gemmops
