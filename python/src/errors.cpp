// python/src/errors.cpp: THE Status -> Python exception table, and the Status class Python sees
// SPDX-License-Identifier: Apache-2.0
#include <nanobind/stl/string.h>

#include <stdexcept>

#include "bindings.hpp"

namespace gemmops::python {

namespace {

// gemmops' own exception classes, one per error code that has no builtin of its own, so that the
// type of an exception says its code. Created once by bind_errors; the module holds them too.
struct ErrorClass {
  ErrorCode code;
  const char* name;  // gemmops.<name>
  const char* doc;
  PyObject* type = nullptr;
};

ErrorClass g_error_classes[] = {
    {ErrorCode::unsupported, "UnsupportedError",
     "Valid arguments an operator or target cannot serve (dtypes, majors, alignment, target). A ValueError."},
    {ErrorCode::no_device, "NoDeviceError",
     "No CUDA driver or device, or not the device required. A RuntimeError."},
    {ErrorCode::compile_failed, "CompileError",
     "NVRTC rejected a kernel, or JIT is disabled and nothing is cached (the log is in the message). "
     "A RuntimeError."},
    {ErrorCode::driver_error, "DriverError", "A CUDA driver call failed: the call, the error name and its string. "
                                             "A RuntimeError."},
    {ErrorCode::out_of_memory, "OutOfMemoryError",
     "An allocation failed (device or host memory). A RuntimeError and a MemoryError."},
};

PyObject* error_class(ErrorCode code) {
  for (const ErrorClass& c : g_error_classes)
    if (c.code == code) return c.type;
  return nullptr;
}

/// The builtin base classes of each code's exception (docs/errors.md, "In Python").
nb::object bases_of(ErrorCode code) {
  switch (code) {
    case ErrorCode::unsupported: return nb::borrow(PyExc_ValueError);
    case ErrorCode::out_of_memory: return nb::make_tuple(nb::handle(PyExc_RuntimeError), nb::handle(PyExc_MemoryError));
    default: return nb::borrow(PyExc_RuntimeError);
  }
}

}  // namespace

[[noreturn]] void throw_status(const Status& status) {
  if (status.is_ok()) throw std::runtime_error("internal: an ok status was raised as an error");
  // By code alone (docs/errors.md); the message goes through unchanged: it already names the
  // operand and the rule.
  PyObject* type = status.code() == ErrorCode::invalid_argument ? PyExc_ValueError
                   : status.code() == ErrorCode::internal       ? PyExc_RuntimeError
                                                                : error_class(status.code());
  if (type == nullptr) throw std::runtime_error(status.message());  // only before bind_errors ran
  PyErr_SetString(type, status.message().c_str());
  throw nb::python_error();
}

void bind_errors(nb::module_& m) {
  for (ErrorClass& c : g_error_classes) {
    const std::string qualified = std::string("gemmops.") + c.name;
    // A new reference kept for the life of the process: exceptions may be raised until the end.
    c.type = PyErr_NewExceptionWithDoc(qualified.c_str(), c.doc, bases_of(c.code).ptr(), nullptr);
    if (c.type == nullptr) throw nb::python_error();
    m.attr(c.name) = nb::handle(c.type);
  }
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
