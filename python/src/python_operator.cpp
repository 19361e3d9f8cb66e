// python/src/python_operator.cpp: a user's Python operator class behind the C++ Operator interface
// SPDX-License-Identifier: Apache-2.0
#include <nanobind/stl/string.h>

#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bindings.hpp"

namespace gemmops::python {

namespace {

thread_local const PyArguments* t_current = nullptr;

/// Drops a reference from any thread; after interpreter shutdown it leaks instead of crashing.
void release(nb::object& obj) {
  if (!obj.is_valid()) return;
  if (!Py_IsInitialized()) {
    obj.release();
    return;
  }
  nb::gil_scoped_acquire gil;
  obj.reset();
}

/// What a Python operator's compile() returned.
struct PythonPayload final : ArtifactImpl {
  explicit PythonPayload(nb::object o) : obj(std::move(o)) {}
  ~PythonPayload() override { release(obj); }
  nb::object obj;
};

/// A Python exception (or a failed conversion) inside a callback, as a Status with its text.
Status from_exception(ErrorCode code, const std::string& op, const char* method) {
  try {
    throw;
  } catch (const nb::python_error& e) {
    std::string type = py_type_name(e.type());
    return {code, op + ": " + method + "() raised " + type + ": " + py_str(e.value())};
  } catch (const std::exception& e) {
    return {code, op + ": " + method + "(): " + e.what()};
  }
}

/// None and True mean ok; a Status is taken as is; False and a string (the reason) mean no.
Status to_status(nb::handle r, ErrorCode code, const std::string& op, const char* method) {
  if (r.is_none()) return Status::ok();
  if (nb::isinstance<Status>(r)) return nb::cast<Status>(r);
  if (nb::isinstance<nb::str>(r)) return {code, nb::cast<std::string>(r)};
  if (nb::cast<bool>(nb::bool_(r))) return Status::ok();
  return {code, op + ": " + method + "() returned False"};
}

nb::object member(nb::handle impl, const char* key) {
  nb::object v = impl.attr(key);
  return PyCallable_Check(v.ptr()) ? v() : v;  // name/metadata may be attributes, properties or methods
}

class PythonOperator;

/// Every PythonOperator alive: the registry keeps them past the interpreter's end.
std::mutex g_live_mutex;
std::vector<PythonOperator*> g_live;

class PythonOperator final : public Operator {
 public:
  PythonOperator(OperatorMetadata metadata, nb::object impl)
      : Operator(std::move(metadata)), impl_(std::move(impl)) {
    std::lock_guard lock(g_live_mutex);
    g_live.push_back(this);
  }
  ~PythonOperator() override {
    {
      std::lock_guard lock(g_live_mutex);
      std::erase(g_live, this);
    }
    release(impl_);
  }

  /// Hands over the Python object (with the GIL held); the operator then supports nothing.
  nb::object take_impl() { return std::move(impl_); }

 private:
  Status released() const { return unsupported("operator: " + name() + " was released at interpreter exit"); }

  /// The caller's Python arguments when the call came through the bindings, else a copy without tensors.
  nb::object py_args(const Arguments& args) const {
    if (t_current && &t_current->args == &args) {
      if (nb::object obj = nb::find(t_current); obj.is_valid()) return obj;
    }
    if (std::holds_alternative<GemmArguments>(args)) return nb::cast(PyGemmArguments{{args, nb::none(), nb::none(), nb::none(), nb::none()}});
    return nb::cast(PyGroupedGemmArguments{{args, nb::none(), nb::none(), nb::none(), nb::none()}});
  }

  Status supports_extra(const Arguments& args, const Target&) const override {
    nb::gil_scoped_acquire gil;
    if (!impl_.is_valid()) return released();
    try {
      return to_status(impl_.attr("supports")(py_args(args)), ErrorCode::unsupported, name(), "supports");
    } catch (...) {
      return from_exception(ErrorCode::unsupported, name(), "supports");
    }
  }

  Result<Artifact> do_compile(const Arguments& args) const override {
    nb::gil_scoped_acquire gil;
    if (!impl_.is_valid()) return released();
    try {
      nb::object payload = impl_.attr("compile")(py_args(args));
      std::string description = py_repr(payload);
      return Artifact(name(), std::make_shared<PythonPayload>(std::move(payload)), std::move(description));
    } catch (...) {
      return from_exception(ErrorCode::compile_failed, name(), "compile");
    }
  }

  std::size_t do_workspace_size(const Arguments& args) const override {
    nb::gil_scoped_acquire gil;
    if (!impl_.is_valid() || !nb::hasattr(impl_, "workspace_size")) return 0;
    try {
      return nb::cast<std::size_t>(impl_.attr("workspace_size")(py_args(args)));
    } catch (...) {
      return 0;  // a broken workspace_size shows up in run(), which gets no workspace
    }
  }

  Status do_run(const Arguments& args, const Artifact& artifact, Stream stream, Workspace ws) const override {
    nb::gil_scoped_acquire gil;
    if (!impl_.is_valid()) return released();
    try {
      const auto* payload = artifact.get<PythonPayload>();
      nb::object compiled = payload ? payload->obj : nb::none();
      nb::object workspace = ws.data ? nb::object(nb::make_tuple(reinterpret_cast<uintptr_t>(ws.data), ws.bytes))
                                     : nb::none();
      nb::object r = impl_.attr("run")(py_args(args), nb::arg("compiled_artifact") = compiled,
                                       nb::arg("stream") = reinterpret_cast<uintptr_t>(stream),
                                       nb::arg("workspace") = workspace);
      return to_status(r, ErrorCode::internal, name(), "run");
    } catch (...) {
      return from_exception(ErrorCode::internal, name(), "run");
    }
  }

  double do_estimated_time_us(const Arguments& args, const Target&) const override {
    nb::gil_scoped_acquire gil;
    try {
      if (impl_.is_valid() && nb::hasattr(impl_, "estimated_time_us"))
        return nb::cast<double>(impl_.attr("estimated_time_us")(py_args(args)));
    } catch (...) {
    }
    return std::numeric_limits<double>::infinity();  // unknown: after every operator that knows
  }

  nb::object impl_;
};

}  // namespace

CurrentArguments::CurrentArguments(const PyArguments& args) : previous_(t_current) { t_current = &args; }
CurrentArguments::~CurrentArguments() { t_current = previous_; }
const PyArguments* current_arguments() { return t_current; }

void release_python_operators_at_exit() {
  // atexit runs while the interpreter still works, and drops the hook once it ran.
  nb::module_::import_("atexit").attr("register")(nb::cpp_function([] {
    std::vector<nb::object> taken;
    {
      std::lock_guard lock(g_live_mutex);
      for (PythonOperator* op : g_live) taken.push_back(op->take_impl());
    }
    taken.clear();  // outside the lock: dropping an object may run code that destroys an operator
  }));
}

bool is_python_operator(const Operator& op) { return dynamic_cast<const PythonOperator*>(&op) != nullptr; }

OperatorPtr make_python_operator(nb::handle impl) {
  for (const char* method : {"name", "supports", "compile", "run"}) {
    if (!nb::hasattr(impl, method))
      throw nb::type_error((std::string("register_operator: the operator must have name, metadata, supports, "
                                        "compile and run; it has no '") + method + "'").c_str());
  }
  std::string op_name = py_str(member(impl, "name"));
  nb::object metadata = nb::hasattr(impl, "metadata") ? member(impl, "metadata") : nb::none();
  return std::make_shared<PythonOperator>(metadata_from_python(metadata, op_name), nb::borrow(impl));
}

}  // namespace gemmops::python
