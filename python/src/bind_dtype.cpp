// python/src/bind_dtype.cpp: dtype-like and device-like Python objects -> DType and Device
// SPDX-License-Identifier: Apache-2.0
#include <charconv>
#include <string>

#include "bindings.hpp"

namespace gemmops::python {

DType to_dtype(nb::handle obj, const char* what) {
  // str(torch.float32) == "torch.float32", str(np.dtype("float16")) == "float16", and numpy scalar
  // types (np.float32, ml_dtypes.bfloat16) carry their name in __name__; parse_dtype knows them all.
  std::string text;
  if (nb::isinstance<nb::str>(obj)) {
    text = nb::cast<std::string>(obj);
  } else if (PyType_Check(obj.ptr()) && nb::hasattr(obj, "__name__")) {
    text = nb::cast<std::string>(obj.attr("__name__"));
  } else {
    text = py_str(obj);
  }
  if (auto dtype = parse_dtype(text)) return *dtype;
  throw nb::type_error((std::string(what) +
                        ": must be a dtype gemmops knows (bf16, fp16, fp32, e4m3, e5m2, int32, as a "
                        "string, torch or numpy dtype); got '" + text + "' (" + py_type_name(obj.type()) + ")")
                           .c_str());
}

Device to_device(nb::handle obj, const char* what) {
  std::string text = nb::isinstance<nb::str>(obj) ? nb::cast<std::string>(obj)
                                                  : py_str(obj);
  if (text == "cpu") return Device::cpu();
  if (text == "cuda") return Device::cuda(0);
  if (text.rfind("cuda:", 0) == 0) {
    int index = -1;
    const char* first = text.data() + 5;
    const char* last = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(first, last, index);
    if (ec == std::errc() && ptr == last && first != last && index >= 0) return Device::cuda(index);
  }
  throw nb::value_error(
      (std::string(what) + ": device must be \"cpu\", \"cuda\" or \"cuda:N\"; got '" + text + "'").c_str());
}

}  // namespace gemmops::python
