// python/src/bind_tensor.cpp: any Python tensor -> TensorDesc (DLPack, torch meta/fake, TensorSpec)
// SPDX-License-Identifier: Apache-2.0
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"

namespace gemmops::python {

namespace {

/// gemmops.TensorSpec: a description without data, for discovery and compile.
struct TensorSpec {
  TensorDesc desc;
};

std::string message(const char* operand, const std::string& rest) { return std::string(operand) + ": " + rest; }

using ReadOnlyArray = nb::ndarray<nb::ro>;

const char* name_of(Operand operand) {
  switch (operand) {
    case Operand::A: return "A";
    case Operand::B: return "B";
    case Operand::out: return "out";
    case Operand::offsets: return "offsets";
    case Operand::workspace: return "workspace";
    case Operand::bias: return "epilogue.bias";
    case Operand::row_scale: return "epilogue.row_scale";
    case Operand::scales: return "scales";
    case Operand::x: return "x";
    case Operand::q: return "q";
    case Operand::scales_out: return "scales";
    case Operand::rows: return "rows";
    case Operand::pair_rows: return "pair_rows";
    case Operand::scores: return "scores";
    case Operand::row_limit: return "row_limit";
    case Operand::a_row_index: return "a_row_index";
    case Operand::a_k_index: return "a_k_index";
    case Operand::b_k_index: return "b_k_index";
    case Operand::pre_activation: return "epilogue.pre_activation";
    case Operand::grad_pre_activation: return "epilogue.activation_grad.pre_activation";
    case Operand::scaled_activation: return "epilogue.activation_grad.scaled_activation";
    case Operand::score_grad_partials: return "epilogue.activation_grad.score_grad_partials";
    case Operand::topk_ids: return "topk_ids";
    case Operand::route_offsets: return "offsets";
    case Operand::token: return "token";
    case Operand::pair: return "pair";
    case Operand::sorted_scores: return "sorted_scores";
    case Operand::logits: return "logits";
    case Operand::selection_bias: return "selection_bias";
    case Operand::grad_topk_weights: return "grad_topk_weights";
    case Operand::router_ids: return "topk_ids";
    case Operand::router_weights: return "topk_weights";
    case Operand::grad_logits: return "grad_logits";
  }
  return "?";
}

bool is_written(Operand operand) {
  return operand == Operand::out || operand == Operand::workspace || operand == Operand::q ||
         operand == Operand::scales_out || operand == Operand::pre_activation ||
         operand == Operand::scaled_activation || operand == Operand::score_grad_partials ||
         operand == Operand::route_offsets || operand == Operand::token || operand == Operand::pair ||
         operand == Operand::sorted_scores || operand == Operand::router_ids || operand == Operand::router_weights ||
         operand == Operand::grad_logits;
}

/// "int64", "float64", "torch.int64" -> "int64": the dtype an object says it has, or its DLPack code.
std::string dtype_name(nb::handle obj, const ReadOnlyArray* array) {
  if (nb::hasattr(obj, "dtype")) {
    std::string text = py_str(obj.attr("dtype"));
    return text.rfind("torch.", 0) == 0 ? text.substr(6) : text;
  }
  if (array == nullptr) return "unknown";
  const nb::dlpack::dtype t = array->dtype();
  return "DLPack type code " + std::to_string(t.code) + " of " + std::to_string(t.bits) + " bits";
}

/// The rule a tensor of a dtype gemmops has no name for breaks, worded as validate() words its own.
[[noreturn]] void refuse_dtype(Operand operand, const std::string& seen) {
  std::string rule;
  switch (operand) {
    case Operand::offsets: rule = "must be int32"; break;
    case Operand::out: rule = "dtype must be one of bf16, fp16, fp32"; break;
    case Operand::A:
    case Operand::B: rule = "dtype must be one of bf16, fp16, fp32, e4m3, e5m2"; break;
    case Operand::workspace: rule = "dtype must be one of bf16, fp16, fp32, e4m3, e5m2, int32"; break;
    case Operand::bias: rule = "dtype must be fp32 or out's dtype"; break;
    case Operand::row_scale: rule = "dtype must be fp32"; break;
    case Operand::scales:
    case Operand::scales_out: rule = "dtype must be fp32"; break;
    case Operand::x: rule = "dtype must be one of bf16, fp32"; break;
    case Operand::q: rule = "dtype must be e4m3"; break;
    case Operand::rows: rule = "must be bf16, fp16 or fp32"; break;
    case Operand::pair_rows:
    case Operand::row_limit:
    case Operand::a_row_index:
    case Operand::a_k_index:
    case Operand::b_k_index:
    case Operand::topk_ids:
    case Operand::route_offsets:
    case Operand::token:
    case Operand::pair: rule = "must be int32"; break;
    case Operand::scores:
    case Operand::sorted_scores: rule = "must be fp32"; break;
    case Operand::pre_activation:
    case Operand::grad_pre_activation:
    case Operand::scaled_activation: rule = "dtype must be out's dtype"; break;
    case Operand::score_grad_partials: rule = "dtype must be fp32"; break;
  }
  throw_status(invalid_argument(message(name_of(operand), rule + "; got " + seen)));
}

/// torch.Tensor, without importing torch: only a process that imported torch can hold one.
nb::object torch_module() {
  nb::object modules = nb::module_::import_("sys").attr("modules");
  return modules.attr("get")("torch");
}

bool is_torch_tensor(nb::handle obj, const nb::object& torch) {
  return !torch.is_none() && nb::isinstance(obj, torch.attr("Tensor"));
}

bool is_fake_torch_tensor(nb::handle obj, const nb::object& torch) {
  if (py_str(obj.attr("device").attr("type")) == "meta") return true;
  if (obj.type().is(torch.attr("Tensor"))) return false;  // the common case: no subclass, real
  nb::object fake = nb::module_::import_("torch._subclasses.fake_tensor");
  return nb::cast<bool>(fake.attr("is_fake")(obj));
}

/// A torch tensor without storage: its sizes, strides and dtype; "meta" stands for cuda:0 because
/// meta tensors describe GPU problems (a FakeTensor keeps its own device).
TensorDesc fake_torch_desc(nb::handle obj, Operand operand) {
  TensorDesc desc;
  std::optional<DType> dtype = parse_dtype(py_str(obj.attr("dtype")));
  if (!dtype) refuse_dtype(operand, dtype_name(obj, nullptr));
  desc.dtype = *dtype;
  desc.shape = nb::cast<std::vector<int64_t>>(nb::tuple(obj.attr("shape")));
  desc.strides = nb::cast<std::vector<int64_t>>(nb::tuple(obj.attr("stride")()));
  std::string type = py_str(obj.attr("device").attr("type"));
  if (type == "meta") {
    desc.device = Device::cuda(0);
  } else if (type == "cuda") {
    nb::object index = obj.attr("device").attr("index");
    desc.device = Device::cuda(index.is_none() ? 0 : nb::cast<int>(index));
  } else {
    desc.device = to_device(obj.attr("device"), name_of(operand));
  }
  return desc;
}

std::optional<DType> from_dlpack(nb::dlpack::dtype t) {
  using C = nb::dlpack::dtype_code;
  if (t.lanes != 1) return std::nullopt;
  switch (static_cast<C>(t.code)) {
    case C::Float: return t.bits == 16 ? std::optional(DType::fp16) : t.bits == 32 ? std::optional(DType::fp32) : std::nullopt;
    case C::Bfloat: return t.bits == 16 ? std::optional(DType::bf16) : std::nullopt;
    case C::Int: return t.bits == 32 ? std::optional(DType::i32) : std::nullopt;
    case C::Float8_E4M3FN: return DType::e4m3;
    case C::Float8_E5M2: return DType::e5m2;
    default: return std::nullopt;
  }
}

/// The dtype an object says it has (numpy, torch, ml_dtypes), when gemmops knows its name.
std::optional<DType> declared_dtype(nb::handle obj) {
  if (!nb::hasattr(obj, "dtype")) return std::nullopt;
  return parse_dtype(py_str(obj.attr("dtype")));
}

/// numpy has no bf16/fp8 and older DLPack producers cannot export them: reinterpret the same bytes
/// as unsigned integers of the same width, which every producer exports, and keep the declared dtype.
nb::object same_width_view(nb::handle obj, DType dtype, const nb::object& torch) {
  if (is_torch_tensor(obj, torch)) return obj.attr("view")(torch.attr(size_of(dtype) == 1 ? "uint8" : "int16"));
  return obj.attr("view")(size_of(dtype) == 1 ? "uint8" : "uint16");
}

/// torch's __dlpack__() without a stream makes the legacy default stream wait on the current one,
/// which breaks CUDA graph capture; stream=-1 asks for no synchronisation (gemmops runs on the
/// stream the caller names). Everything else goes through nanobind's own import, asking for read
/// access only (numpy exports a read-only array, e.g. broadcast_to or frombuffer, only so).
bool import_array(nb::handle src, const nb::object& torch, ReadOnlyArray& out) {
  if (is_torch_tensor(src, torch)) {
    try {
      return nb::try_cast(src.attr("__dlpack__")(nb::arg("stream") = -1), out);
    } catch (const nb::python_error&) {
      return false;  // e.g. a dtype this torch cannot export; the caller tries a same-width view
    }
  }
  return nb::try_cast(src, out);
}

/// Whether the producer lets `src` be written. torch's DLPack has no read-only flag (its tensors
/// are writable); for the others nanobind's writable import answers.
bool is_writable(nb::handle src, const nb::object& torch) {
  if (is_torch_tensor(src, torch)) return true;
  nb::ndarray<> writable;
  return nb::try_cast(src, writable);
}

}  // namespace

TensorDesc to_tensor_desc(nb::handle obj, Operand operand) {
  const char* role = name_of(operand);
  if (nb::isinstance<TensorSpec>(obj)) return nb::cast<const TensorSpec&>(obj).desc;
  nb::object torch = torch_module();
  nb::object source = nb::borrow(obj);
  if (is_torch_tensor(obj, torch)) {
    if (is_fake_torch_tensor(obj, torch)) return fake_torch_desc(obj, operand);
    // DLPack refuses tensors that require grad; gemmops only reads and writes their memory.
    if (nb::cast<bool>(obj.attr("requires_grad"))) source = obj.attr("detach")();
  }
  std::optional<DType> declared = declared_dtype(source);
  ReadOnlyArray array;
  const bool imported = import_array(source, torch, array);
  bool ok = imported && from_dlpack(array.dtype()).has_value();
  if (!ok && declared && (*declared == DType::bf16 || is_fp8(*declared))) {
    source = same_width_view(source, *declared, torch);
    ok = import_array(source, torch, array);
  } else if (ok) {
    declared = from_dlpack(array.dtype());
  }
  if (!ok) {
    // A tensor of a dtype gemmops cannot take breaks a rule; anything else is not a tensor at all.
    if (imported || nb::hasattr(obj, "dtype")) refuse_dtype(operand, dtype_name(obj, imported ? &array : nullptr));
    throw nb::type_error(message(role, "must be a tensor (DLPack or buffer protocol, a torch meta tensor or "
                                       "gemmops.TensorSpec); got " + py_type_name(obj.type())).c_str());
  }
  if (is_written(operand) && !is_writable(source, torch))
    throw_status(invalid_argument(message(role, "must be writable; got a read-only " + py_type_name(obj.type()))));
  TensorDesc desc;
  desc.dtype = *declared;
  for (size_t i = 0; i < array.ndim(); ++i) {
    desc.shape.push_back(static_cast<int64_t>(array.shape(i)));
    desc.strides.push_back(static_cast<int64_t>(array.stride(i)));
  }
  switch (array.device_type()) {
    case nb::device::cpu::value:
    case nb::device::cuda_host::value: desc.device = Device::cpu(); break;  // pinned memory is host memory
    case nb::device::cuda::value:
    case nb::device::cuda_managed::value: desc.device = Device::cuda(array.device_id()); break;
    default:
      throw nb::value_error(message(role, "must live on the cpu or a cuda device; got DLPack device type " +
                                              std::to_string(array.device_type())).c_str());
  }
  // Read access was enough to import; gemmops writes only through out, which is writable.
  desc.data = const_cast<void*>(array.data());
  return desc;
}

void bind_tensor(nb::module_& m) {
  nb::class_<TensorSpec>(m, "TensorSpec",
                         "A tensor description without data (fake): enough for get_operators and compile")
      .def("__init__",
           [](TensorSpec* self, std::vector<int64_t> shape, nb::handle dtype,
              std::optional<std::vector<int64_t>> strides, nb::handle device) {
             TensorDesc desc = TensorDesc::contiguous(to_dtype(dtype, "TensorSpec"), shape,
                                                      to_device(device, "TensorSpec"));
             if (strides) {
               if (strides->size() != shape.size())
                 throw nb::value_error(("TensorSpec: strides must have one entry per dimension (" +
                                        std::to_string(shape.size()) + "); got " +
                                        std::to_string(strides->size())).c_str());
               desc.strides = *strides;  // in elements, like torch's stride()
             }
             new (self) TensorSpec{std::move(desc)};
           },
           nb::arg("shape"), nb::arg("dtype"), nb::arg("strides") = nb::none(), nb::arg("device") = "cuda:0")
      .def_prop_ro("shape", [](const TensorSpec& t) { return nb::tuple(nb::cast(t.desc.shape)); })
      .def_prop_ro("strides", [](const TensorSpec& t) { return nb::tuple(nb::cast(t.desc.strides)); })
      .def_prop_ro("dtype", [](const TensorSpec& t) { return std::string(name(t.desc.dtype)); })
      .def_prop_ro("device", [](const TensorSpec& t) { return t.desc.device.to_string(); })
      .def("__repr__", [](const TensorSpec& t) { return "TensorSpec(" + t.desc.describe() + ")"; });
}

}  // namespace gemmops::python
