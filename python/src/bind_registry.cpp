// python/src/bind_registry.cpp: discovery, bring-your-own registration and device checks
// SPDX-License-Identifier: Apache-2.0
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <optional>
#include <string>

#include "bindings.hpp"

namespace gemmops::python {

namespace {
std::optional<Target> parse_target(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  return unwrap(Target::parse(*text));
}
}  // namespace

void bind_registry(nb::module_& m) {
  m.def("get_operators",
        [](const PyArguments& a, std::optional<std::string> target) {
          std::optional<Target> t = parse_target(target);
          CurrentArguments current(a);
          nb::list out;
          for (OperatorPtr& op : get_operators(a.args, t)) out.append(PyOperator{std::move(op)});
          return out;
        },
        nb::arg("args"), nb::arg("target") = nb::none(),
        "Every operator that serves args, best first. target: \"90a\", \"cpu\", ... (None: the tensors' "
        "device, else GEMMOPS_TARGET)");
  // Also the reference that links the built-in providers in: gemmops_core's registry calls
  // default_registry(), which lives in the gemmops archive (linked before the core).
  m.def("all_operators",
        [] {
          nb::list out;
          for (OperatorPtr& op : default_registry().all()) out.append(PyOperator{std::move(op)});
          return out;
        },
        "Every registered operator (built-in and registered ones), in registration order");
  m.def("get_rejections",
        [](const PyArguments& a, std::optional<std::string> target) {
          std::optional<Target> t = parse_target(target);
          CurrentArguments current(a);
          nb::list out;
          for (Rejection& r : get_rejections(a.args, t)) {
            nb::object op = r.op ? nb::cast(PyOperator{r.op}) : nb::none();
            out.append(nb::make_tuple(op, r.reason));
          }
          return out;
        },
        nb::arg("args"), nb::arg("target") = nb::none(),
        "(operator, Status) for every operator that does not serve args, with the first reason");
  m.def("register_operator",
        [](nb::handle impl) {
          if (nb::isinstance<PyOperator>(impl))
            throw nb::value_error("register_operator: this operator is already registered");
          OperatorPtr op = make_python_operator(impl);
          check(register_operator(op));
          return PyOperator{std::move(op)};
        },
        nb::arg("op"),
        "Adds a Python operator (name, metadata, supports(args), compile(args), "
        "run(args, compiled_artifact, stream, workspace)) where get_operators finds it");
  m.def("device_supports",
        [](const std::string& target, int ordinal) { return device_supports(target, ordinal); },
        nb::arg("target"), nb::arg("ordinal") = 0, "Status: ok when CUDA device `ordinal` runs `target` operators");
  m.def("device_or_env_supports",
        [](const std::string& target, int ordinal) { return device_or_env_supports(target, ordinal); },
        nb::arg("target"), nb::arg("ordinal") = 0,
        "Like device_supports, but without a device GEMMOPS_TARGET stands in for one");
}

}  // namespace gemmops::python
