// python/src/bind_moe.cpp: gemmops.gather_reduce, the MoE layer's combine step
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
}

}  // namespace gemmops::python
