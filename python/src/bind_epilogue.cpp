// python/src/bind_epilogue.cpp: EpilogueOps (activation, gate layout, alpha, limit, bias, row scale,
// the second operands) and the names of the activations and gate layouts
// SPDX-License-Identifier: Apache-2.0
#include <nanobind/stl/string.h>

#include <string>

#include "bindings.hpp"

namespace gemmops::python {

namespace {

nb::tuple activation_names() {
  nb::list l;
  for (Activation a : kAllActivations) l.append(std::string(name(a)));
  return nb::tuple(l);
}

nb::tuple gate_layout_names() {
  nb::list l;
  for (GateLayout g : kAllGateLayouts) l.append(std::string(name(g)));
  return nb::tuple(l);
}

std::string joined(const nb::tuple& names) {
  std::string s;
  for (nb::handle n : names) s += (s.empty() ? "" : ", ") + py_str(n);
  return s;
}

Activation to_activation(const std::string& text, const char* what) {
  if (auto a = parse_activation(text)) return *a;
  throw_status(invalid_argument(std::string(what) + ": must be one of " + joined(activation_names()) + "; got '" +
                                text + "'"));
}

GateLayout to_gate_layout(const std::string& text, const char* what) {
  if (auto g = parse_gate_layout(text)) return *g;
  throw_status(invalid_argument(std::string(what) + ": must be one of " + joined(gate_layout_names()) + "; got '" +
                                text + "'"));
}

std::string describe(const EpilogueOps& e) {
  std::string s = "activation=" + std::string(name(e.activation));
  if (is_gated(e.activation)) s += ", gate_layout=" + std::string(name(e.gate_layout));
  if (e.activation == Activation::swiglu_oss) s += ", alpha=" + std::to_string(e.alpha) + ", limit=" + std::to_string(e.limit);
  if (e.bias) s += ", bias=" + e.bias->describe();
  if (e.row_scale) s += ", row_scale=" + e.row_scale->describe();
  if (e.pre_activation) s += ", pre_activation=" + e.pre_activation->describe();
  if (const auto& g = e.activation_grad)
    s += ", activation_grad=(pre_activation=" + g->pre_activation.describe() + ", scaled_activation=" +
         g->scaled_activation.describe() + ", score_grad_partials=" + g->score_grad_partials.describe() + ")";
  return s;
}

nb::object optional_tensor(const nb::object& obj) { return obj.is_valid() ? obj : nb::none(); }

// activation_grad's three tensors come together: all three or none.
std::optional<ActivationGrad> to_activation_grad(const nb::object& h, const nb::object& scaled,
                                                 const nb::object& partials) {
  const int given = int(!h.is_none()) + int(!scaled.is_none()) + int(!partials.is_none());
  if (given == 0) return std::nullopt;
  if (given != 3)
    throw_status(invalid_argument(
        "epilogue.activation_grad: needs grad_pre_activation (h, read), scaled_activation and score_grad_partials "
        "(written) together; got " + std::string(h.is_none() ? "no " : "") + "grad_pre_activation, " +
        (scaled.is_none() ? "no " : "") + "scaled_activation, " + (partials.is_none() ? "no " : "") +
        "score_grad_partials"));
  return ActivationGrad{to_tensor_desc(h, Operand::grad_pre_activation),
                        to_tensor_desc(scaled, Operand::scaled_activation),
                        to_tensor_desc(partials, Operand::score_grad_partials)};
}

}  // namespace

EpilogueOps to_epilogue_ops(nb::handle obj) {
  if (obj.is_none()) return {};
  if (!nb::isinstance<PyEpilogueOps>(obj))
    throw nb::type_error(("epilogue: must be a gemmops.EpilogueOps or None; got " + py_type_name(obj.type())).c_str());
  return nb::cast<const PyEpilogueOps&>(obj).ops;
}

nb::object epilogue_object(const PyArguments& a) {
  if (a.epilogue.is_valid() && !a.epilogue.is_none()) return a.epilogue;
  // Arguments made in C++ (handed to a Python operator): the ops, without Python tensors.
  return nb::cast(PyEpilogueOps{epilogue_of(a.args), nb::none(), nb::none()});
}

nb::dict epilogue_support_to_dict(const EpilogueSupport& s) {
  nb::dict d;
  nb::list acts, layouts;
  for (Activation a : s.activations) acts.append(std::string(name(a)));
  for (GateLayout g : s.gate_layouts) layouts.append(std::string(name(g)));
  d["activations"] = acts;
  d["gate_layouts"] = layouts;
  d["bias"] = s.bias;
  d["row_scale"] = s.row_scale;
  d["pre_activation"] = s.pre_activation;
  d["activation_grad"] = s.activation_grad;
  return d;
}

EpilogueSupport epilogue_support_from_python(nb::handle obj, const std::string& op) {
  EpilogueSupport s;
  if (obj.is_none()) return s;
  auto field = [&](const char* key) -> nb::object {
    if (nb::isinstance<nb::dict>(obj)) {
      nb::dict d = nb::borrow<nb::dict>(obj);
      return d.contains(key) ? nb::borrow(d[key]) : nb::none();
    }
    return nb::getattr(obj, key, nb::none());
  };
  const std::string acts = op + ": metadata.constraints.epilogue.activations";
  const std::string layouts = op + ": metadata.constraints.epilogue.gate_layouts";
  nb::object v;
  if (!(v = field("activations")).is_none())
    for (nb::handle item : v) {
      const Activation a = to_activation(py_str(item), acts.c_str());
      if (a != Activation::none) s.activations.push_back(a);  // always served
    }
  if (!(v = field("gate_layouts")).is_none())
    for (nb::handle item : v) s.gate_layouts.push_back(to_gate_layout(py_str(item), layouts.c_str()));
  if (!(v = field("bias")).is_none()) s.bias = nb::cast<bool>(v);
  if (!(v = field("row_scale")).is_none()) s.row_scale = nb::cast<bool>(v);
  if (!(v = field("pre_activation")).is_none()) s.pre_activation = nb::cast<bool>(v);
  if (!(v = field("activation_grad")).is_none()) s.activation_grad = nb::cast<bool>(v);
  return s;
}

void bind_epilogue(nb::module_& m) {
  m.attr("activations") = activation_names();
  m.attr("gate_layouts") = gate_layout_names();
  m.attr("score_grad_chunk") = kScoreGradChunk;
  m.def("score_grad_chunks", [](int64_t i) { return score_grad_chunks(i); }, nb::arg("i"),
        "Columns of activation_grad's score_grad_partials for a product of i columns: ceil(i / 64), the same "
        "for every operator");

  nb::class_<PyEpilogueOps>(
      m, "EpilogueOps",
      "What the epilogue computes before the store, in fp32, per element of the product (row r of group g, "
      "column c):\n"
      "  v = acc[r, c] + bias[g, c]; v = activation(v); out[r, c'] = convert(v * row_scale[r]).\n"
      "Gated activations (swiglu, swiglu_oss) pair gate and up columns of the product's N = 2I "
      "(gate_layout \"concatenated\": [0, I) and [I, 2I); \"interleaved\": even and odd) and write I columns.\n"
      "swiglu_oss: g = min(gate, limit), u = clamp(up, -limit, limit), out = (u + 1) * g * sigmoid(alpha * g).\n"
      "bias: (G, N) M-grouped, (N,) dense, (L, N) batched, fp32 or out's dtype. row_scale: fp32, (TotalM,), (M,) "
      "or (L, M). Served on the M-grouped, dense and batched forms.\n"
      "pre_activation (M-grouped, with an activation): a second output, v before the activation, (TotalM, N), "
      "out's dtype.\n"
      "grad_pre_activation, scaled_activation, score_grad_partials (M-grouped, gated activation, together): the "
      "gated activation's backward over the product dA (I columns): out is dh (TotalM, 2I) in gate_layout, "
      "grad_pre_activation the saved h (TotalM, 2I), row_scale the score s; writes s * act(h) (TotalM, I) and "
      "(TotalM, score_grad_chunks(I)) fp32 partials of dA * act(h) per 64 columns (their row sums are ds).")
      .def("__init__",
           [](PyEpilogueOps* self, const std::string& activation, const std::string& gate_layout, float alpha,
              float limit, nb::object bias, nb::object row_scale, nb::object pre_activation,
              nb::object grad_pre_activation, nb::object scaled_activation, nb::object score_grad_partials) {
             EpilogueOps e;
             e.activation = to_activation(activation, "epilogue.activation");
             e.gate_layout = to_gate_layout(gate_layout, "epilogue.gate_layout");
             e.alpha = alpha;
             e.limit = limit;
             if (!bias.is_none()) e.bias = to_tensor_desc(bias, Operand::bias);
             if (!row_scale.is_none()) e.row_scale = to_tensor_desc(row_scale, Operand::row_scale);
             if (!pre_activation.is_none()) e.pre_activation = to_tensor_desc(pre_activation, Operand::pre_activation);
             e.activation_grad = to_activation_grad(grad_pre_activation, scaled_activation, score_grad_partials);
             new (self) PyEpilogueOps{std::move(e),
                                      std::move(bias),
                                      std::move(row_scale),
                                      std::move(pre_activation),
                                      std::move(grad_pre_activation),
                                      std::move(scaled_activation),
                                      std::move(score_grad_partials)};
           },
           nb::arg("activation") = "none", nb::arg("gate_layout") = "concatenated", nb::arg("alpha") = 1.702f,
           nb::arg("limit") = 7.0f, nb::arg("bias") = nb::none(), nb::arg("row_scale") = nb::none(),
           nb::arg("pre_activation") = nb::none(), nb::arg("grad_pre_activation") = nb::none(),
           nb::arg("scaled_activation") = nb::none(), nb::arg("score_grad_partials") = nb::none())
      .def_prop_ro("activation", [](const PyEpilogueOps& e) { return std::string(name(e.ops.activation)); })
      .def_prop_ro("gate_layout", [](const PyEpilogueOps& e) { return std::string(name(e.ops.gate_layout)); })
      .def_prop_ro("alpha", [](const PyEpilogueOps& e) { return e.ops.alpha; })
      .def_prop_ro("limit", [](const PyEpilogueOps& e) { return e.ops.limit; })
      .def_prop_ro("bias", [](const PyEpilogueOps& e) { return optional_tensor(e.bias); })
      .def_prop_ro("row_scale", [](const PyEpilogueOps& e) { return optional_tensor(e.row_scale); })
      .def_prop_ro("pre_activation", [](const PyEpilogueOps& e) { return optional_tensor(e.pre_activation); })
      .def_prop_ro("grad_pre_activation", [](const PyEpilogueOps& e) { return optional_tensor(e.grad_pre_activation); })
      .def_prop_ro("scaled_activation", [](const PyEpilogueOps& e) { return optional_tensor(e.scaled_activation); })
      .def_prop_ro("score_grad_partials", [](const PyEpilogueOps& e) { return optional_tensor(e.score_grad_partials); })
      .def_prop_ro("gated", [](const PyEpilogueOps& e) { return is_gated(e.ops.activation); },
                   "True for swiglu and swiglu_oss: out has half the product's columns")
      .def_prop_ro("empty", [](const PyEpilogueOps& e) { return e.ops.empty(); },
                   "True when the product is stored as it is")
      .def("__repr__", [](const PyEpilogueOps& e) { return "EpilogueOps(" + describe(e.ops) + ")"; });
}

}  // namespace gemmops::python
