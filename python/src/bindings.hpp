// python/src/bindings.hpp: what the binding files share: Python-side holders, conversions, errors
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>  // every file casts messages and names

#include <optional>
#include <string>
#include <utility>

#include "gemmops/gemmops.hpp"

namespace nb = nanobind;

namespace gemmops::python {

// str(h), type(h).__name__ and repr(h) as std::string. The detour through nb::handle matters:
// nb::str(obj.attr("x")) would cast the attribute to str (and fail) instead of calling str() on it.
inline std::string py_str(nb::handle h) { return nb::str(h).c_str(); }
inline std::string py_type_name(nb::handle h) { return nb::type_name(h).c_str(); }
inline std::string py_repr(nb::handle h) { return nb::repr(h).c_str(); }

// errors.cpp: the one Status -> Python exception table.
[[noreturn]] void throw_status(const Status& status);
inline void check(const Status& status) {
  if (!status) throw_status(status);
}
template <class T>
T unwrap(Result<T> result) {
  if (!result) throw_status(result.status());
  return std::move(result).value();
}

// bind_tensor.cpp: the one conversion of a Python object into an operand.
/// What a tensor is for, which says what the conversion asks of it: A, B and offsets are only read
/// (read-only arrays are fine), out and a workspace are written (they must be writable).
/// The fp8 additions: `scales` (an OperandScales tensor, read), `x` (read) and `q` (written) of
/// quantize_fp8, and `scales_out` (the scales quantize_fp8 writes, named "scales"). gather_reduce's
/// inputs: `rows`, `pair_rows`, `scores`, `row_limit` (read). `a_row_index`: a gathered A's rows (read);
/// `a_k_index`, `b_k_index`: the K-grouped form's operands gathered along K (read). route's `topk_ids`
/// (read) and its outputs `route_offsets` (named "offsets"), `token`, `pair`, `sorted_scores` (written).
/// router_topk's `logits`, `selection_bias`, `grad_topk_weights` (read) and `router_ids`,
/// `router_weights` (named "topk_ids", "topk_weights"), `grad_logits` (written).
enum class Operand {
  A, B, out, offsets, workspace, bias, row_scale, scales, x, q, scales_out,
  pre_activation, grad_pre_activation, scaled_activation, score_grad_partials,  // the epilogue's second operands
  rows, pair_rows, scores, row_limit,  // gather_reduce
  a_row_index, a_k_index, b_k_index,
  topk_ids, route_offsets, token, pair, sorted_scores,  // route: topk_ids read; the others written
  logits, selection_bias, grad_topk_weights,            // router_topk (and its backward): read
  router_ids, router_weights, grad_logits               // written: "topk_ids", "topk_weights", "grad_logits"
};
/// DLPack/buffer objects (numpy, torch, cupy, jax), torch meta tensors and FakeTensors (fake) and
/// gemmops.TensorSpec (fake). The operand's name starts every error message. A tensor of a dtype
/// gemmops has no name for, or a read-only out, raises ValueError with the rule (as a failed rule
/// of the core would); an object that is no tensor at all raises TypeError.
TensorDesc to_tensor_desc(nb::handle obj, Operand operand);

// bind_dtype.cpp
/// torch dtypes, numpy dtypes and scalar types, and strings ("float32", "fp32"); TypeError otherwise.
DType to_dtype(nb::handle obj, const char* what);
/// "cpu", "cuda", "cuda:N" (or a torch.device); ValueError otherwise.
Device to_device(nb::handle obj, const char* what);

/// gemmops.EpilogueOps: the ops plus the Python tensors its operands point into.
struct PyEpilogueOps {
  EpilogueOps ops;
  nb::object bias, row_scale;
  nb::object pre_activation;  ///< the forward's second output
  nb::object grad_pre_activation, scaled_activation, score_grad_partials;  ///< ActivationGrad's tensors
};

/// An Arguments plus the Python tensors it points into, kept alive as long as the arguments are.
struct PyArguments {
  Arguments args;
  nb::object A, B, out, offsets;
  nb::object epilogue;  ///< the PyEpilogueOps given, if any (keeps its tensors alive)
  nb::object a_scales, b_scales;  ///< the gemmops.OperandScales objects (None without)
  nb::object a_row_index;         ///< the gathered A's index tensor (None without)
  nb::object a_k_index, b_k_index;  ///< the K-grouped form's K indices (None without)
};
struct PyGemmArguments : PyArguments {};
struct PyGroupedGemmArguments : PyArguments {};

/// An operator as Python sees it (built-in or a user's Python class behind PythonOperator).
struct PyOperator {
  OperatorPtr op;
};
struct PyArtifact {
  Artifact artifact;
};

// bind_operator.cpp
/// `stream` as a CUstream for running `args`: None gives torch's current stream for CUDA operands
/// when torch is imported, else the default stream; an int is a raw handle; objects with
/// .cuda_stream (torch) or __cuda_stream__ are asked for theirs.
Stream to_stream(nb::handle stream, const Arguments& args);

// bind_epilogue.cpp
/// `obj` as epilogue ops: None gives the empty epilogue, a gemmops.EpilogueOps its ops; TypeError
/// otherwise.
EpilogueOps to_epilogue_ops(nb::handle obj);
/// The ops of valid arguments as a gemmops.EpilogueOps (the one given when there was one).
nb::object epilogue_object(const PyArguments& a);
nb::dict epilogue_support_to_dict(const EpilogueSupport& s);
EpilogueSupport epilogue_support_from_python(nb::handle obj, const std::string& op);
// bind_scaling.cpp
/// gemmops.OperandScales: the scales and the Python tensor they point into.
struct PyOperandScales {
  OperandScales value;
  nb::object tensor;
};
/// None -> no scales; a gemmops.OperandScales -> its value; anything else is a TypeError naming `role`.
std::optional<OperandScales> to_operand_scales(nb::handle obj, const char* role);

// bind_metadata.cpp
nb::dict metadata_to_dict(const OperatorMetadata& metadata);
/// A user's metadata (a dict or an object with the same attributes); `name` comes from the operator.
OperatorMetadata metadata_from_python(nb::handle metadata, std::string name);

// python_operator.cpp
/// Wraps a Python object with name, metadata, supports, compile and run in a C++ Operator.
OperatorPtr make_python_operator(nb::handle impl);
/// Whether `op` is a user's Python class (its calls need the GIL).
bool is_python_operator(const Operator& op);
/// Registers an atexit hook that drops every Python operator's Python object: the C++ registry
/// outlives the interpreter, and an object it held would keep alive, past the end, all that its
/// class reaches (its methods' module globals: the caller's tensors, arguments and operators).
/// The operators stay registered and support nothing after that.
void release_python_operators_at_exit();
/// While alive, callbacks into Python operators for `args` receive `obj` (the caller's arguments).
class CurrentArguments {
 public:
  explicit CurrentArguments(const PyArguments& args);
  ~CurrentArguments();
  CurrentArguments(const CurrentArguments&) = delete;
  CurrentArguments& operator=(const CurrentArguments&) = delete;

 private:
  const PyArguments* previous_;
};
const PyArguments* current_arguments();

// Per-file registration, called from module.cpp in this order.
void bind_errors(nb::module_& m);
void bind_tensor(nb::module_& m);
void bind_epilogue(nb::module_& m);
void bind_arguments(nb::module_& m);
void bind_operator(nb::module_& m);
void bind_registry(nb::module_& m);
void bind_plan(nb::module_& m);
void bind_scaling(nb::module_& m);
void bind_moe(nb::module_& m);
void bind_autotune(nb::module_& m);

}  // namespace gemmops::python
