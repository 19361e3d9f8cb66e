// python/src/errors.cpp: THE Status -> Python exception table, and the Status class Python sees
// SPDX-License-Identifier: Apache-2.0
#include <nanobind/stl/string.h>

#include <stdexcept>

#include "bindings.hpp"

namespace gemmops::python {

[[noreturn]] void throw_status(const Status& status) {
  // The core's message goes through unchanged: it already names the operand and the rule.
  const std::string& msg = status.message();
  switch (status.code()) {
    case ErrorCode::invalid_argument:
      if (msg.find("dtype") != std::string::npos) throw nb::type_error(msg.c_str());
      throw nb::value_error(msg.c_str());
    case ErrorCode::unsupported:
    case ErrorCode::no_device: throw nb::value_error(msg.c_str());
    case ErrorCode::compile_failed:
    case ErrorCode::driver_error:
    case ErrorCode::out_of_memory:
    case ErrorCode::internal: throw std::runtime_error(msg);
    case ErrorCode::ok: break;
  }
  throw std::runtime_error("internal: an ok status was raised as an error");
}

void bind_errors(nb::module_& m) {
  nb::class_<Status>(m, "Status",
                     "The answer of a check: truthy when ok; otherwise .error says why and .code how")
      .def("__bool__", [](const Status& s) { return s.is_ok(); })
      .def_prop_ro("ok", [](const Status& s) { return s.is_ok(); })
      .def_prop_ro("code", [](const Status& s) { return std::string(to_string(s.code())); },
                   "\"ok\", \"invalid_argument\", \"unsupported\", \"no_device\", ...")
      .def_prop_ro("error",
                   [](const Status& s) -> nb::object {
                     if (s.is_ok()) return nb::none();
                     return nb::str(s.message().c_str());
                   },
                   "The message, or None when ok")
      .def("raise_if_error", [](const Status& s) { check(s); },
           "Raises the exception the error table maps this status to; nothing when ok")
      .def("__repr__", [](const Status& s) { return "Status(" + s.to_string() + ")"; });
}

}  // namespace gemmops::python
