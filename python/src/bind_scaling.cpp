// python/src/bind_scaling.cpp: gemmops.OperandScales (fp8 operands' scales), quantize_fp8, scale_shape
// SPDX-License-Identifier: Apache-2.0
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"

namespace gemmops::python {

namespace {

// A name of the enum, or a ValueError listing the names (a rule of the arguments, as the core words it).
template <class E, std::size_t N>
E parse_name(const std::string& text, const E (&all)[N], const char* what) {
  std::string names;
  for (E e : all) {
    if (name(e) == text) return e;
    names += (names.empty() ? "" : ", ") + std::string(name(e));
  }
  throw_status(invalid_argument(std::string(what) + ": must be one of " + names + "; got \"" + text + "\""));
}

std::string describe(const PyOperandScales& s) {
  return "OperandScales(" + std::string(name(s.value.granularity)) + ", " + std::string(name(s.value.layout)) +
         ", " + s.value.scales.describe() + ")";
}

}  // namespace

std::optional<OperandScales> to_operand_scales(nb::handle obj, const char* role) {
  if (obj.is_none()) return std::nullopt;
  if (!nb::isinstance<PyOperandScales>(obj)) {
    throw nb::type_error((std::string(role) + ": must be a gemmops.OperandScales or None; got " +
                          py_type_name(obj.type())).c_str());
  }
  return nb::cast<const PyOperandScales&>(obj).value;
}

void bind_scaling(nb::module_& m) {
  nb::class_<PyOperandScales>(
      m, "OperandScales",
      "The fp32 scales of an fp8 operand (docs/fp8.md): granularity \"tensor\", \"row\", \"block_1x128\" or\n"
      "\"block_128x128\"; layout \"k_major\" (K blocks contiguous) or \"mn_major\" (rows of A / columns of B\n"
      "contiguous, DeepGEMM's TMA-aligned form) for block scales. Pass as a_scales= / b_scales=.")
      .def("__init__",
           [](PyOperandScales* self, nb::object scales, const std::string& granularity, const std::string& layout) {
             OperandScales s;
             s.scales = to_tensor_desc(scales, Operand::scales);
             s.granularity = parse_name(granularity, kAllScaleGranularities, "granularity");
             s.layout = parse_name(layout, kAllScaleLayouts, "layout");
             new (self) PyOperandScales{std::move(s), std::move(scales)};
           },
           nb::arg("scales"), nb::arg("granularity") = "block_1x128", nb::arg("layout") = "k_major")
      .def_prop_ro("scales", [](const PyOperandScales& s) { return s.tensor; })
      .def_prop_ro("granularity", [](const PyOperandScales& s) { return std::string(name(s.value.granularity)); })
      .def_prop_ro("layout", [](const PyOperandScales& s) { return std::string(name(s.value.layout)); })
      .def("__repr__", &describe);

  m.def(
      "quantize_fp8",
      [](nb::handle x, nb::handle q, const PyOperandScales& scales, std::uintptr_t stream) {
        OperandScales s = scales.value;
        s.scales = to_tensor_desc(scales.tensor, Operand::scales_out);  // written: must be writable
        check(quantize_fp8(to_tensor_desc(x, Operand::x), to_tensor_desc(q, Operand::q), s,
                           reinterpret_cast<Stream>(stream)));
      },
      nb::arg("x"), nb::arg("q"), nb::arg("scales"), nb::arg("stream") = 0,
      "Quantises x (R, C) or (L, R, C) of bf16/fp32 into e4m3 q and scales.scales, in blocks along C:\n"
      "scale = max(amax, 1e-4) / 448, q = e4m3(x * (448 / amax)) (round to nearest even). To quantise\n"
      "B (K, N) along K, pass its transposed views. Host tensors run on the host (a non-finite x raises\n"
      "ValueError); CUDA tensors launch on `stream` (a cudaStream_t as an int; 0: the legacy default\n"
      "stream) without synchronising, with the host's bits, and a block holding a NaN or infinity gets\n"
      "a NaN scale and NaN codes.");

  m.def(
      "scale_shape",
      [](const std::string& granularity, int64_t mn, int64_t k, std::optional<int64_t> instances) {
        return nb::tuple(nb::cast(scale_shape(parse_name(granularity, kAllScaleGranularities, "granularity"),
                                              instances ? *instances : -1, mn, k)));
      },
      nb::arg("granularity"), nb::arg("mn"), nb::arg("k"), nb::arg("instances") = nb::none(),
      "The shape of the scales of an MN x K matrix (of `instances` stacked ones).");
}

}  // namespace gemmops::python
