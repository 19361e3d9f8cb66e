// python/src/bind_autotune.cpp: autotune (operators ordered by measured time on real arguments)
// SPDX-License-Identifier: Apache-2.0
#include <nanobind/stl/optional.h>

#include <optional>
#include <vector>

#include "bindings.hpp"

namespace gemmops::python {

void bind_autotune(nb::module_& m) {
  m.def(
      "autotune",
      [](const PyArguments& a, std::optional<nb::list> candidates, int warmup, int iterations, nb::handle stream,
         double timeout_ms, bool include_trial, int compile_threads) {
        if (compile_threads < 0) throw nb::value_error("autotune: compile_threads must be >= 0 (0: the machine's cores)");
        if (warmup < 0 || iterations < 1)
          throw nb::value_error("autotune: warmup must be >= 0 and iterations >= 1");
        CurrentArguments current(a);
        std::vector<OperatorPtr> ops;
        if (candidates) {
          for (nb::handle c : *candidates) {
            if (!nb::isinstance<PyOperator>(c))
              throw nb::type_error("autotune: candidates must be gemmops Operators (from get_operators)");
            ops.push_back(nb::cast<const PyOperator&>(c).op);
          }
        } else {
          ops = get_operators(a.args);
        }
        AutotuneOptions options;
        options.warmup = warmup;
        options.iterations = iterations;
        options.stream = to_stream(stream, a.args);
        options.timeout_ms = timeout_ms;
        options.include_trial = include_trial;
        // The GIL stays held (the candidates may be Python operators), so those compile one by one on
        // this thread: a worker thread calling one would wait for the GIL forever.
        options.compile_threads = compile_threads;
        for (const OperatorPtr& op : ops)
          if (is_python_operator(*op)) options.compile_threads = 1;
        std::vector<Timing> timings = autotune(a.args, ops, options);
        nb::list out;
        for (Timing& t : timings) out.append(nb::make_tuple(PyOperator{t.op}, t.median_us, t.status));
        return out;
      },
      nb::arg("args"), nb::arg("candidates") = nb::none(), nb::arg("warmup") = 3, nb::arg("iterations") = 10,
      nb::arg("stream") = nb::none(), nb::arg("timeout_ms") = 10000.0, nb::arg("include_trial") = false,
      nb::arg("compile_threads") = 0,
      "[(operator, median_us, Status)]: the candidates (default: get_operators(args)) compiled and timed on "
      "args, fastest first, then those that failed with why. args need data: every run overwrites out (and "
      "the epilogue's outputs). Synchronises the stream; not graph-safe. A run that does not finish within "
      "timeout_ms fails its candidate and ends the timing. Trial designs are timed only with include_trial "
      "or GEMMOPS_TRIAL_DESIGNS=1. The candidates compile side by side on compile_threads threads (0: the "
      "machine's cores, at most 16; Python operators always one by one). Choose once per shape and keep the result.");
}

}  // namespace gemmops::python
