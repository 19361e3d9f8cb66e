// python/src/bind_plan.cpp: Plan (an operator and artifact bound to one layout) and make_plan
// SPDX-License-Identifier: Apache-2.0
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <optional>
#include <string>

#include "bindings.hpp"

namespace gemmops::python {

namespace {

struct PyPlan {
  Plan plan;
};

Stream as_stream(uintptr_t s) { return reinterpret_cast<Stream>(s); }

// The layout rule of run(): the same dtypes, shapes, strides and device as the plan's.
void check_same_layout(const TensorDesc& planned, const TensorDesc& got, const char* operand) {
  if (planned.dtype == got.dtype && planned.shape == got.shape && planned.strides == got.strides &&
      planned.device == got.device)
    return;
  throw nb::value_error((std::string(operand) + ": must have the plan's layout (" + planned.describe() + "); got " +
                         got.describe())
                            .c_str());
}

void check_same_optional(const std::optional<TensorDesc>& planned, const std::optional<TensorDesc>& got,
                         const char* operand) {
  if (planned.has_value() != got.has_value())
    throw nb::value_error((std::string(operand) + ": must be " + (planned ? "given" : "absent") +
                           " as in the plan's layout; got " + (got ? "one" : "none"))
                              .c_str());
  if (planned) check_same_layout(*planned, *got, operand);
}

// The epilogue's ops and operands as planned; alpha and limit are the plan's (OperandData carries
// only data), so a call with others is refused rather than served with the plan's.
void check_same_epilogue(const EpilogueOps& planned, const EpilogueOps& got) {
  if (planned.activation != got.activation || planned.gate_layout != got.gate_layout)
    throw nb::value_error(("epilogue: must have the plan's ops (activation " + std::string(name(planned.activation)) +
                           ", gate_layout " + std::string(name(planned.gate_layout)) + "); got activation " +
                           std::string(name(got.activation)) + ", gate_layout " + std::string(name(got.gate_layout)))
                              .c_str());
  if (planned.alpha != got.alpha || planned.limit != got.limit)
    throw nb::value_error(("epilogue.alpha, epilogue.limit: must be the plan's (" + std::to_string(planned.alpha) +
                           ", " + std::to_string(planned.limit) + "); make a plan for others; got " +
                           std::to_string(got.alpha) + ", " + std::to_string(got.limit))
                              .c_str());
  check_same_optional(planned.bias, got.bias, "epilogue.bias");
  check_same_optional(planned.row_scale, got.row_scale, "epilogue.row_scale");
  check_same_optional(planned.pre_activation, got.pre_activation, "epilogue.pre_activation");
  auto grad_part = [](const EpilogueOps& e, int i) -> std::optional<TensorDesc> {
    if (!e.activation_grad) return std::nullopt;
    return i == 0 ? e.activation_grad->pre_activation
                  : i == 1 ? e.activation_grad->scaled_activation : e.activation_grad->score_grad_partials;
  };
  const char* const roles[] = {"epilogue.activation_grad.pre_activation", "epilogue.activation_grad.scaled_activation",
                               "epilogue.activation_grad.score_grad_partials"};
  for (int i = 0; i < 3; ++i) check_same_optional(grad_part(planned, i), grad_part(got, i), roles[i]);
}

const void* data_of(const std::optional<TensorDesc>& t) { return t ? t->data : nullptr; }

}  // namespace

void bind_plan(nb::module_& m) {
  nb::class_<PyPlan>(m, "Plan",
                     "An operator and its compiled artifact bound to one layout of arguments (dtypes, shapes, "
                     "strides, device, data alignment): run() on new tensors of that layout costs about the launch")
      .def_prop_ro("operator", [](const PyPlan& p) { return PyOperator{p.plan.op()}; })
      .def_prop_ro("artifact", [](const PyPlan& p) { return PyArtifact{p.plan.artifact()}; })
      .def_prop_ro("workspace_size", [](const PyPlan& p) { return p.plan.workspace_size(); },
                   "Bytes of workspace every run needs (0 for most)")
      .def("run",
           [](const PyPlan& p, const PyArguments& a, uintptr_t stream, uintptr_t workspace, std::size_t workspace_bytes) {
             const Arguments& layout = p.plan.layout();
             if (layout.index() != a.args.index())
               throw nb::value_error("args: must be of the plan's kind (GemmArguments or GroupedGemmArguments)");
             check_same_layout(operand_a(layout), operand_a(a.args), "A");
             check_same_layout(operand_b(layout), operand_b(a.args), "B");
             check_same_layout(operand_out(layout), operand_out(a.args), "out");
             const EpilogueOps& e = epilogue_of(a.args);
             check_same_epilogue(epilogue_of(layout), e);
             OperandData d{operand_a(a.args).data, operand_b(a.args).data, operand_out(a.args).data, nullptr,
                           data_of(e.bias), data_of(e.row_scale)};
             if (const auto* g = std::get_if<GroupedGemmArguments>(&a.args)) {
               d.offsets = g->offsets.data;
               const auto& planned = std::get<GroupedGemmArguments>(layout).a_row_index;
               if (planned.has_value() != g->a_row_index.has_value())
                 throw nb::value_error("a_row_index: must be given exactly when the plan's arguments gave it");
               if (g->a_row_index) {
                 check_same_layout(*planned, *g->a_row_index, "a_row_index");
                 d.a_row_index = g->a_row_index->data;
               }
               const auto& planned_k = std::get<GroupedGemmArguments>(layout);
               if (planned_k.a_k_index.has_value() != g->a_k_index.has_value())
                 throw nb::value_error("a_k_index: must be given exactly when the plan's arguments gave it");
               if (planned_k.b_k_index.has_value() != g->b_k_index.has_value())
                 throw nb::value_error("b_k_index: must be given exactly when the plan's arguments gave it");
               if (g->a_k_index) {
                 check_same_layout(*planned_k.a_k_index, *g->a_k_index, "a_k_index");
                 d.a_k_index = g->a_k_index->data;
               }
               if (g->b_k_index) {
                 check_same_layout(*planned_k.b_k_index, *g->b_k_index, "b_k_index");
                 d.b_k_index = g->b_k_index->data;
               }
             }
             if (e.pre_activation) d.pre_activation = e.pre_activation->data;
             if (const auto& g = e.activation_grad) {
               d.grad_pre_activation = g->pre_activation.data;
               d.scaled_activation = g->scaled_activation.data;
               d.score_grad_partials = g->score_grad_partials.data;
             }
             Status status;
             {
               nb::gil_scoped_release release;
               status = p.plan.run(d, as_stream(stream), {reinterpret_cast<void*>(workspace), workspace_bytes});
             }
             check(status);
           },
           nb::arg("args"), nb::arg("stream") = 0, nb::arg("workspace") = 0, nb::arg("workspace_bytes") = 0,
           "Runs on args (tensors of the plan's layout); stream and workspace as raw addresses")
      .def("_run_unchecked",
           [](const PyPlan& p, uintptr_t a, uintptr_t b, uintptr_t out, uintptr_t offsets, uintptr_t stream,
              uintptr_t workspace, std::size_t workspace_bytes, uintptr_t bias, uintptr_t row_scale,
              uintptr_t a_row_index, uintptr_t a_k_index, uintptr_t b_k_index, uintptr_t pre_activation,
              uintptr_t grad_pre_activation, uintptr_t scaled_activation, uintptr_t score_grad_partials) {
             // The epilogue's second operands are outputs (but h): a plan that has them must get their
             // addresses, or its kernel would write through null.
             const EpilogueOps& planned = epilogue_of(p.plan.layout());
             if (planned.pre_activation && pre_activation == 0)
               throw nb::value_error("pre_activation: the plan's epilogue writes it; its address must not be 0");
             if (planned.activation_grad && (grad_pre_activation == 0 || scaled_activation == 0 ||
                                             score_grad_partials == 0))
               throw nb::value_error("grad_pre_activation, scaled_activation, score_grad_partials: the plan's "
                                     "epilogue reads or writes them; their addresses must not be 0");
             OperandData d{reinterpret_cast<const void*>(a),       reinterpret_cast<const void*>(b),
                           reinterpret_cast<void*>(out),           reinterpret_cast<const void*>(offsets),
                           reinterpret_cast<const void*>(bias),    reinterpret_cast<const void*>(row_scale),
                           reinterpret_cast<const void*>(a_row_index)};
             d.a_k_index = reinterpret_cast<const void*>(a_k_index);
             d.b_k_index = reinterpret_cast<const void*>(b_k_index);
             d.pre_activation = reinterpret_cast<void*>(pre_activation);
             d.grad_pre_activation = reinterpret_cast<const void*>(grad_pre_activation);
             d.scaled_activation = reinterpret_cast<void*>(scaled_activation);
             d.score_grad_partials = reinterpret_cast<void*>(score_grad_partials);
             Status status;
             {
               nb::gil_scoped_release release;
               status = p.plan.run(d, as_stream(stream), {reinterpret_cast<void*>(workspace), workspace_bytes});
             }
             check(status);
           },
           nb::arg("a"), nb::arg("b"), nb::arg("out"), nb::arg("offsets") = 0, nb::arg("stream") = 0,
           nb::arg("workspace") = 0, nb::arg("workspace_bytes") = 0, nb::arg("bias") = 0, nb::arg("row_scale") = 0,
           nb::arg("a_row_index") = 0, nb::arg("a_k_index") = 0, nb::arg("b_k_index") = 0,
           nb::arg("pre_activation") = 0, nb::arg("grad_pre_activation") = 0, nb::arg("scaled_activation") = 0,
           nb::arg("score_grad_partials") = 0,
           "For callers that made the tensors themselves (gemmops.torch): data addresses of tensors of the "
           "plan's layout, unchecked. Use run() otherwise.")
      .def("__repr__", [](const PyPlan& p) { return "Plan(" + p.plan.op()->name() + ")"; });

  m.def("make_plan",
        [](const PyArguments& a, const PyOperator* op, std::optional<std::string> target) {
          CurrentArguments current(a);
          Result<Plan> r = [&] {
            nb::gil_scoped_release release;  // may compile
            if (op != nullptr) return make_plan(a.args, op->op);
            std::optional<Target> t;
            if (target) t = unwrap(Target::parse(*target));
            return make_plan(a.args, t);
          }();
          return PyPlan{unwrap(std::move(r))};
        },
        nb::arg("args"), nb::arg("operator") = nb::none(), nb::arg("target") = nb::none(),
        "The best operator for args (or `operator`), compiled and bound to args' layout (fake tensors are fine)");
}

}  // namespace gemmops::python
