// python/src/bind_arguments.cpp: GemmArguments and GroupedGemmArguments, validated on construction
// SPDX-License-Identifier: Apache-2.0
#include <nanobind/stl/string.h>

#include <string>

#include "bindings.hpp"

namespace gemmops::python {

namespace {

DType accumulator(nb::handle obj) { return obj.is_none() ? DType::fp32 : to_dtype(obj, "accumulator_type"); }

std::string describe(const PyArguments& a) {
  auto kind = operation_kind(a.args);
  std::string text = kind ? std::string(name(*kind)) : std::string("invalid");
  text += ": A " + operand_a(a.args).describe() + "; B " + operand_b(a.args).describe() + "; out " +
          operand_out(a.args).describe();
  if (auto* g = std::get_if<GroupedGemmArguments>(&a.args)) text += "; offsets " + g->offsets.describe();
  for (auto [role, s] : {std::pair{"a_scales", a.a_scales}, std::pair{"b_scales", a.b_scales}})
    if (s && !s.is_none()) text += std::string("; ") + role + " " + py_repr(s);
  text += "; accumulator " + std::string(name(accumulator_of(a.args)));
  const EpilogueOps& e = epilogue_of(a.args);
  if (!e.empty()) text += "; epilogue " + py_str(nb::repr(epilogue_object(a)));
  return text;
}

nb::dict shape_dict(const PyArguments& a) {
  ProblemShape shape = unwrap(problem_shape(a.args));
  nb::dict d;
  d["kind"] = std::string(name(shape.kind));
  d["m"] = shape.m;
  d["n"] = shape.n;
  d["k"] = shape.k;
  d["groups"] = shape.groups;
  return d;
}

}  // namespace

void bind_arguments(nb::module_& m) {
  nb::class_<PyArguments>(m, "Arguments", "Base of GemmArguments and GroupedGemmArguments")
      .def_prop_ro("A", [](const PyArguments& a) { return a.A; })
      .def_prop_ro("B", [](const PyArguments& a) { return a.B; })
      .def_prop_ro("out", [](const PyArguments& a) { return a.out; })
      .def_prop_ro("accumulator_type", [](const PyArguments& a) { return std::string(name(accumulator_of(a.args))); })
      .def_prop_ro("kind", [](const PyArguments& a) { return std::string(name(unwrap(operation_kind(a.args)))); },
                   "\"gemm\", \"batched_gemm\", \"grouped_gemm_m\", \"grouped_gemm_k\" or \"grouped_gemm_n\"")
      .def_prop_ro("problem_shape", &shape_dict, "{kind, m, n, k, groups} after validation")
      .def_prop_ro("epilogue", &epilogue_object, "The gemmops.EpilogueOps applied before the store")
      .def_prop_ro("a_scales", [](const PyArguments& a) { return a.a_scales ? a.a_scales : nb::none(); },
                   "A's gemmops.OperandScales, or None")
      .def_prop_ro("b_scales", [](const PyArguments& a) { return a.b_scales ? a.b_scales : nb::none(); },
                   "B's gemmops.OperandScales, or None")
      .def("__repr__", [](const PyArguments& a) { return "Arguments(" + describe(a) + ")"; });

  nb::class_<PyGemmArguments, PyArguments>(
      m, "GemmArguments",
      "out = A @ B: (M,K) x (K,N) -> (M,N), or batched (L,M,K) x (L,K,N) -> (L,M,N). Any strides.\n"
      "epilogue=gemmops.EpilogueOps(...) adds bias, activation and row scale before the store (out has N/2 "
      "columns with a gated activation).")
      .def("__init__",
           [](PyGemmArguments* self, nb::object A, nb::object B, nb::object out, nb::handle acc, nb::object epilogue,
              nb::object a_scales, nb::object b_scales) {
             GemmArguments g{to_tensor_desc(A, Operand::A), to_tensor_desc(B, Operand::B), to_tensor_desc(out, Operand::out),
                             accumulator(acc), to_epilogue_ops(epilogue)};
             g.a_scales = to_operand_scales(a_scales, "a_scales");
             g.b_scales = to_operand_scales(b_scales, "b_scales");
             Arguments args = std::move(g);
             check(validate(args));  // before construction: a failed __init__ leaves nothing behind
             new (self) PyGemmArguments{{std::move(args), std::move(A), std::move(B), std::move(out), nb::none(),
                                         std::move(epilogue), std::move(a_scales), std::move(b_scales)}};
           },
           nb::arg("A"), nb::arg("B"), nb::arg("out"), nb::arg("accumulator_type") = nb::none(),
           nb::arg("epilogue") = nb::none(), nb::arg("a_scales") = nb::none(), nb::arg("b_scales") = nb::none());

  nb::class_<PyGroupedGemmArguments, PyArguments>(
      m, "GroupedGemmArguments",
      "Grouped GEMM with int32 offsets (G,) of exclusive group ends.\n"
      "M-grouped: A (TotalM,K) x B (G,K,N) -> out (TotalM,N).\n"
      "K-grouped: A (M,TotalK) x B (TotalK,N) -> out (G,M,N).\n"
      "N-grouped: A (G,M,K) x B (K,TotalN) -> out (M,TotalN).\n"
      "Masked M-grouped: A (G,MaxM,K) x B (G,K,N) -> out (G,MaxM,N), offsets = each group's row count.\n"
      "zero_tail=True also sets an M-grouped out's rows (an N-grouped out's columns) past offsets[G-1] to zero.\n"
      "group_alignment=a (M-grouped, a power of two): group i starts at offsets[i-1] rounded up to a multiple of a.\n"
      "epilogue=gemmops.EpilogueOps(...) (M-grouped only) adds bias, activation and row scale before the store.\n"
      "a_row_index=int32 (TotalM,) (M-grouped only): row r of the product reads A[a_row_index[r]] (A then has any\n"
      "number of rows): a gathered A, e.g. each (token, choice) pair's token row of a MoE layer.\n"
      "a_k_index=, b_k_index=int32 (TotalK,) (K-grouped only): column k of the product's A is A[:, a_k_index[k]],\n"
      "row k of its B is B[b_k_index[k]] (A then (M, Rows), B (Rows, N)): operands gathered along K, e.g. a MoE\n"
      "layer's weight gradients over each expert's pairs, reading x.T or dout through the pairs' tokens.")
      .def("__init__",
           [](PyGroupedGemmArguments* self, nb::object A, nb::object B, nb::object out, nb::handle acc,
              nb::object offsets, bool zero_tail, nb::object epilogue, int32_t group_alignment, nb::object a_scales,
              nb::object b_scales, nb::object a_row_index, nb::object a_k_index, nb::object b_k_index) {
             if (offsets.is_none())
               throw nb::value_error("offsets: GroupedGemmArguments needs int32 offsets (G,); got None");
             GroupedGemmArguments g{to_tensor_desc(A, Operand::A), to_tensor_desc(B, Operand::B), to_tensor_desc(out, Operand::out),
                                    accumulator(acc), to_tensor_desc(offsets, Operand::offsets), zero_tail};
             g.group_alignment = group_alignment;
             g.epilogue = to_epilogue_ops(epilogue);
             g.a_scales = to_operand_scales(a_scales, "a_scales");
             g.b_scales = to_operand_scales(b_scales, "b_scales");
             if (!a_row_index.is_none()) g.a_row_index = to_tensor_desc(a_row_index, Operand::a_row_index);
             if (!a_k_index.is_none()) g.a_k_index = to_tensor_desc(a_k_index, Operand::a_k_index);
             if (!b_k_index.is_none()) g.b_k_index = to_tensor_desc(b_k_index, Operand::b_k_index);
             Arguments args = std::move(g);
             check(validate(args));
             new (self) PyGroupedGemmArguments{{std::move(args), std::move(A), std::move(B), std::move(out),
                                                std::move(offsets), std::move(epilogue), std::move(a_scales),
                                                std::move(b_scales), std::move(a_row_index), std::move(a_k_index),
                                                std::move(b_k_index)}};
           },
           nb::arg("A"), nb::arg("B"), nb::arg("out"), nb::arg("accumulator_type") = nb::none(),
           nb::arg("offsets") = nb::none(), nb::arg("zero_tail") = false, nb::arg("epilogue") = nb::none(),
           nb::arg("group_alignment") = 1, nb::arg("a_scales") = nb::none(), nb::arg("b_scales") = nb::none(),
           nb::arg("a_row_index") = nb::none(), nb::arg("a_k_index") = nb::none(), nb::arg("b_k_index") = nb::none())
      .def_prop_ro("offsets", [](const PyArguments& a) { return a.offsets; })
      .def_prop_ro("group_alignment",
                   [](const PyArguments& a) { return std::get<GroupedGemmArguments>(a.args).group_alignment; },
                   "M-grouped: groups start at multiples of this (1: right after the previous group)")
      .def_prop_ro("zero_tail", [](const PyArguments& a) { return std::get<GroupedGemmArguments>(a.args).zero_tail; },
                   "M-grouped: rows of out past offsets[G-1] are set to zero (N-grouped: columns; else left "
                   "untouched)");
}

}  // namespace gemmops::python
