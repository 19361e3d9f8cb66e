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
TensorDesc fake_torch_desc(nb::handle obj, const char* operand) {
  TensorDesc desc;
  desc.dtype = to_dtype(obj.attr("dtype"), operand);
  desc.shape = nb::cast<std::vector<int64_t>>(nb::tuple(obj.attr("shape")));
  desc.strides = nb::cast<std::vector<int64_t>>(nb::tuple(obj.attr("stride")()));
  std::string type = py_str(obj.attr("device").attr("type"));
  if (type == "meta") {
    desc.device = Device::cuda(0);
  } else if (type == "cuda") {
    nb::object index = obj.attr("device").attr("index");
    desc.device = Device::cuda(index.is_none() ? 0 : nb::cast<int>(index));
  } else {
    desc.device = to_device(obj.attr("device"), operand);
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
/// stream the caller names). Everything else goes through nanobind's own import.
bool import_array(nb::handle src, const nb::object& torch, nb::ndarray<>& out) {
  if (is_torch_tensor(src, torch)) {
    try {
      return nb::try_cast(src.attr("__dlpack__")(nb::arg("stream") = -1), out);
    } catch (const nb::python_error&) {
      return false;  // e.g. a dtype this torch cannot export; the caller tries a same-width view
    }
  }
  return nb::try_cast(src, out);
}

}  // namespace

TensorDesc to_tensor_desc(nb::handle obj, const char* operand) {
  if (nb::isinstance<TensorSpec>(obj)) return nb::cast<const TensorSpec&>(obj).desc;
  nb::object torch = torch_module();
  nb::object source = nb::borrow(obj);
  if (is_torch_tensor(obj, torch)) {
    if (is_fake_torch_tensor(obj, torch)) return fake_torch_desc(obj, operand);
    // DLPack refuses tensors that require grad; gemmops only reads and writes their memory.
    if (nb::cast<bool>(obj.attr("requires_grad"))) source = obj.attr("detach")();
  }
  std::optional<DType> declared = declared_dtype(source);
  nb::ndarray<> array;
  bool ok = import_array(source, torch, array) && from_dlpack(array.dtype()).has_value();
  if (!ok && declared && (*declared == DType::bf16 || is_fp8(*declared))) {
    ok = import_array(same_width_view(source, *declared, torch), torch, array);
  } else if (ok) {
    declared = from_dlpack(array.dtype());
  }
  if (!ok) {
    std::string seen = py_type_name(obj.type());
    if (nb::hasattr(obj, "dtype")) seen += " of dtype " + py_str(obj.attr("dtype"));
    throw nb::type_error(message(operand, "must be a tensor of dtype bf16, fp16, fp32, e4m3, e5m2 or int32 "
                                          "(DLPack or buffer protocol, a torch meta tensor or gemmops.TensorSpec); "
                                          "got " + seen).c_str());
  }
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
      throw nb::value_error(message(operand, "must live on the cpu or a cuda device; got DLPack device type " +
                                                 std::to_string(array.device_type())).c_str());
  }
  desc.data = array.data();
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
