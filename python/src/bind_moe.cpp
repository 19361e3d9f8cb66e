// python/src/bind_moe.cpp: gemmops.gather_reduce (the MoE layer's combine step), gemmops.route (its
// routing: the pairs sorted by expert) and gemmops.router_topk (the router's softmax and top-k)
// SPDX-License-Identifier: Apache-2.0
#include <nanobind/stl/optional.h>

#include <cstdint>

#include "bindings.hpp"

namespace gemmops::python {

void bind_moe(nb::module_& m) {
  m.def(
      "gather_reduce",
      [](nb::handle rows, nb::handle pair_rows, nb::handle out, nb::handle scores, nb::handle row_limit,
         std::uintptr_t stream) {
        GatherReduceArguments a{to_tensor_desc(rows, Operand::rows), to_tensor_desc(pair_rows, Operand::pair_rows),
                                std::nullopt, std::nullopt, to_tensor_desc(out, Operand::out)};
        if (!scores.is_none()) a.scores = to_tensor_desc(scores, Operand::scores);
        if (!row_limit.is_none()) a.row_limit = to_tensor_desc(row_limit, Operand::row_limit);
        check(gather_reduce(a, reinterpret_cast<Stream>(stream)));
      },
      nb::arg("rows"), nb::arg("pair_rows"), nb::arg("out"), nb::arg("scores").none() = nb::none(),
      nb::arg("row_limit").none() = nb::none(), nb::arg("stream") = 0,
      "out[t] = sum over j < k, in that order, of scores[t, j] * rows[pair_rows[t, j]] (scores None: 1),\n"
      "summed in fp32 with one fused multiply-add per choice and rounded once: bits that depend on the\n"
      "inputs only. rows (S, H) and out (T, H) bf16/fp16/fp32 with contiguous columns; pair_rows (T, k)\n"
      "int32 and scores (T, k) fp32, contiguous; row_limit: one int32 element read on the device (rows at\n"
      "or past it are not read, e.g. a grouped GEMM's offsets[-1]). Negative rows, rows past S and past\n"
      "row_limit add nothing. Host tensors run on the host; CUDA tensors launch one kernel on `stream`\n"
      "(a cudaStream_t as an int; 0: the legacy default stream) without synchronising.");
  m.def(
      "route",
      [](nb::handle topk_ids, int num_experts, nb::handle offsets, nb::handle token, nb::handle pair,
         nb::handle scores, nb::handle sorted_scores, std::uintptr_t workspace, std::size_t workspace_bytes,
         std::uintptr_t stream) {
        RouteArguments a{to_tensor_desc(topk_ids, Operand::topk_ids), num_experts,
                         to_tensor_desc(offsets, Operand::route_offsets), to_tensor_desc(token, Operand::token),
                         to_tensor_desc(pair, Operand::pair), std::nullopt, std::nullopt};
        if (!scores.is_none()) a.scores = to_tensor_desc(scores, Operand::scores);
        if (!sorted_scores.is_none()) a.sorted_scores = to_tensor_desc(sorted_scores, Operand::sorted_scores);
        check(route(a, reinterpret_cast<Stream>(stream), Workspace{reinterpret_cast<void*>(workspace), workspace_bytes}));
      },
      nb::arg("topk_ids"), nb::arg("num_experts"), nb::arg("offsets"), nb::arg("token"), nb::arg("pair"),
      nb::arg("scores").none() = nb::none(), nb::arg("sorted_scores").none() = nb::none(), nb::arg("workspace") = 0,
      nb::arg("workspace_bytes") = 0, nb::arg("stream") = 0,
      "The (token, choice) pairs of topk_ids (T, k) int32 sorted by expert, stably, sentinels (ids outside\n"
      "[0, num_experts)) last: writes offsets (E,) int32 (each expert's exclusive end row), token (T k,) int32\n"
      "(each sorted row's token), pair (T, k) int32 (each pair's sorted row) and, with scores (T, k) fp32,\n"
      "sorted_scores (T k,) fp32. Host tensors run on the host; CUDA tensors launch three kernels on `stream`\n"
      "without synchronising, with `workspace` (a device pointer as an int) of route_workspace_size bytes.");
  m.def(
      "router_topk",
      [](nb::handle logits, int k, bool renormalize, nb::handle topk_ids, nb::handle topk_weights,
         nb::handle selection_bias, std::uintptr_t stream) {
        RouterTopkArguments a{to_tensor_desc(logits, Operand::logits), k, renormalize, std::nullopt,
                              to_tensor_desc(topk_ids, Operand::router_ids),
                              to_tensor_desc(topk_weights, Operand::router_weights)};
        if (!selection_bias.is_none()) a.selection_bias = to_tensor_desc(selection_bias, Operand::selection_bias);
        check(router_topk(a, reinterpret_cast<Stream>(stream)));
      },
      nb::arg("logits"), nb::arg("k"), nb::arg("renormalize"), nb::arg("topk_ids"), nb::arg("topk_weights"),
      nb::arg("selection_bias").none() = nb::none(), nb::arg("stream") = 0,
      "Per token: p = softmax(logits (T, E)) in fp32; topk_ids (T, k) int32 = the k experts of largest\n"
      "p + selection_bias (fp32 (E,) or (T, E); a tie: the lower id), in that order; topk_weights (T, k)\n"
      "fp32 = p at them, divided by their sum when renormalize. E <= 1024, k <= 32. Host tensors run on\n"
      "the host; CUDA tensors launch one kernel on `stream` without synchronising.");
  m.def(
      "router_topk_backward",
      [](nb::handle logits, nb::handle topk_ids, nb::handle grad_topk_weights, bool renormalize,
         nb::handle grad_logits, std::uintptr_t stream) {
        RouterTopkBackwardArguments a{to_tensor_desc(logits, Operand::logits), to_tensor_desc(topk_ids, Operand::topk_ids),
                                      to_tensor_desc(grad_topk_weights, Operand::grad_topk_weights), renormalize,
                                      to_tensor_desc(grad_logits, Operand::grad_logits)};
        check(router_topk_backward(a, reinterpret_cast<Stream>(stream)));
      },
      nb::arg("logits"), nb::arg("topk_ids"), nb::arg("grad_topk_weights"), nb::arg("renormalize"),
      nb::arg("grad_logits"), nb::arg("stream") = 0,
      "grad_logits (T, E), logits' dtype = the gradient of sum(grad_topk_weights * topk_weights) with\n"
      "respect to the logits, for the choice topk_ids (ids outside [0, E) add nothing).");
  m.def("route_workspace_size", &route_workspace_size, nb::arg("pairs"), nb::arg("num_experts"),
        "Bytes of device workspace route() needs for `pairs` = T k pairs over num_experts experts.");
}

}  // namespace gemmops::python
