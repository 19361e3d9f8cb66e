// python/src/bind_operator.cpp: Operator (name, metadata, supports, compile, run) and Artifact
// SPDX-License-Identifier: Apache-2.0
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <optional>
#include <string>

#include "bindings.hpp"

namespace gemmops::python {

namespace {

nb::object torch_if_imported() { return nb::module_::import_("sys").attr("modules").attr("get")("torch"); }

Target target_or(const std::optional<std::string>& text, const Target& fallback) {
  return text ? unwrap(Target::parse(*text)) : fallback;
}


/// The bytes of a workspace tensor, whatever its dtype: torch tensors (anything with data_ptr()
/// and nbytes) directly, other tensors through the usual conversion.
Workspace workspace_bytes(nb::handle t) {
  if (nb::hasattr(t, "data_ptr") && nb::hasattr(t, "nbytes")) {
    if (nb::hasattr(t, "is_contiguous") && !nb::cast<bool>(t.attr("is_contiguous")()))
      throw nb::value_error("workspace: must be contiguous");
    return {reinterpret_cast<void*>(nb::cast<uintptr_t>(t.attr("data_ptr")())), nb::cast<std::size_t>(t.attr("nbytes"))};
  }
  TensorDesc d = to_tensor_desc(t, Operand::workspace);
  return {d.data, static_cast<std::size_t>(d.span_bytes())};
}

/// A tensor (its bytes) or a (pointer, bytes) pair; None with a workspace-hungry operator allocates
/// one with torch on the stream's device (the caching allocator keeps it valid in stream order).
Workspace to_workspace(nb::handle ws, const Operator& op, const Arguments& args, nb::object& keep) {
  if (nb::isinstance<nb::tuple>(ws)) {
    nb::tuple t = nb::borrow<nb::tuple>(ws);
    return {reinterpret_cast<void*>(nb::cast<uintptr_t>(t[0])), nb::cast<std::size_t>(t[1])};
  }
  if (!ws.is_none()) return workspace_bytes(ws);
  std::size_t bytes = op.workspace_size(args);
  if (bytes == 0) return {};
  const Device& device = operand_out(args).device;
  nb::object torch = torch_if_imported();
  if (torch.is_none() || !device.is_cuda())
    throw nb::value_error(("workspace: " + op.name() + " needs " + std::to_string(bytes) + " bytes on " +
                           device.to_string() + "; pass workspace=").c_str());
  keep = torch.attr("empty")(bytes, nb::arg("dtype") = torch.attr("uint8"), nb::arg("device") = device.to_string());
  return workspace_bytes(keep);
}

}  // namespace

/// None: torch's current stream for CUDA operands when torch is imported, else the default stream.
/// An int is a raw CUstream; objects with .cuda_stream (torch) or __cuda_stream__ are asked for theirs.
Stream to_stream(nb::handle stream, const Arguments& args) {
  auto as_stream = [](nb::handle h) { return reinterpret_cast<Stream>(nb::cast<uintptr_t>(h)); };
  if (stream.is_none()) {
    const Device& device = operand_out(args).device;
    nb::object torch = torch_if_imported();
    // Fake operands never launch (run refuses them), so they need no stream, nor a CUDA torch.
    if (!device.is_cuda() || torch.is_none() || operand_out(args).is_fake()) return nullptr;
    // The raw handle without making a torch.cuda.Stream object (a few microseconds a call).
    nb::object raw = nb::getattr(torch.attr("_C"), "_cuda_getCurrentRawStream", nb::none());
    if (!raw.is_none()) return as_stream(raw(device.index));
    return as_stream(torch.attr("cuda").attr("current_stream")(device.index).attr("cuda_stream"));
  }
  if (nb::isinstance<nb::int_>(stream)) return as_stream(stream);
  if (nb::hasattr(stream, "cuda_stream")) return as_stream(stream.attr("cuda_stream"));
  if (nb::hasattr(stream, "__cuda_stream__")) return as_stream(nb::tuple(stream.attr("__cuda_stream__")())[1]);
  throw nb::type_error(("stream: must be None, an int CUstream handle or a stream object (torch.cuda.Stream, "
                        "__cuda_stream__); got " + py_type_name(stream.type())).c_str());
}

void bind_operator(nb::module_& m) {
  nb::class_<PyArtifact>(m, "Artifact", "What Operator.compile returns; reusable for every problem size")
      .def_prop_ro("operator_name", [](const PyArtifact& a) { return a.artifact.operator_name(); })
      .def_prop_ro("description", [](const PyArtifact& a) { return a.artifact.description(); })
      .def("__repr__", [](const PyArtifact& a) { return "Artifact(" + a.artifact.description() + ")"; });

  nb::class_<PyOperator>(m, "Operator", "One way to compute a family of operations; see get_operators")
      .def_prop_ro("name", [](const PyOperator& o) { return o.op->name(); })
      .def_prop_ro("metadata", [](const PyOperator& o) { return metadata_to_dict(o.op->metadata()); },
                   "{name, provider, target, design: {tile, cluster, stages, schedule}, constraints: {...}}")
      .def("supports",
           [](const PyOperator& o, const PyArguments& a, std::optional<std::string> target) {
             Target t = target_or(target, o.op->metadata().target);
             CurrentArguments current(a);
             return o.op->supports(a.args, t);
           },
           nb::arg("args"), nb::arg("target") = nb::none(), "A Status: truthy when this operator serves args")
      .def("compile",
           [](const PyOperator& o, const PyArguments& a) {
             CurrentArguments current(a);
             Result<Artifact> r = [&] {
               nb::gil_scoped_release release;
               return o.op->compile(a.args);
             }();
             return PyArtifact{unwrap(std::move(r))};
           },
           nb::arg("args"), "Compiles (or loads from cache) what run needs; fake tensors are fine")
      .def("workspace_size", [](const PyOperator& o, const PyArguments& a) {
             CurrentArguments current(a);
             return o.op->workspace_size(a.args);
           })
      .def("run",
           [](const PyOperator& o, const PyArguments& a, const PyArtifact* artifact, nb::handle stream,
              nb::handle workspace) {
             CurrentArguments current(a);
             Stream s = to_stream(stream, a.args);
             nb::object keep;
             Workspace ws = to_workspace(workspace, *o.op, a.args, keep);
             Artifact art = artifact ? artifact->artifact : Artifact();
             Status status;
             {
               nb::gil_scoped_release release;  // the launch is asynchronous; never hold the GIL over it
               status = o.op->run(a.args, art, s, ws);
             }
             check(status);
           },
           nb::arg("args"), nb::arg("compiled_artifact") = nb::none(), nb::arg("stream") = nb::none(),
           nb::arg("workspace") = nb::none(),
           "Launches on `stream` (None: torch's current stream for CUDA tensors); no host synchronisation")
      .def("estimated_time_us",
           [](const PyOperator& o, const PyArguments& a, std::optional<std::string> target) {
             CurrentArguments current(a);
             return o.op->estimated_time_us(a.args, target_or(target, o.op->metadata().target));
           },
           nb::arg("args"), nb::arg("target") = nb::none())
      .def("__eq__", [](const PyOperator& x, const PyOperator& y) { return x.op == y.op; })
      .def("__hash__", [](const PyOperator& o) { return std::hash<const void*>()(o.op.get()); })
      .def("__repr__", [](const PyOperator& o) { return "Operator(" + o.op->name() + ")"; });
}

}  // namespace gemmops::python
