// python/src/bind_metadata.cpp: OperatorMetadata <-> Python dicts (the same keys both ways)
// SPDX-License-Identifier: Apache-2.0
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <vector>

#include "bindings.hpp"

namespace gemmops::python {

namespace {

constexpr Schedule kSchedules[] = {Schedule::cpu_blocked, Schedule::cooperative, Schedule::pingpong,
                                   Schedule::small_m, Schedule::custom, Schedule::simt};

nb::list dtype_list(const std::vector<DType>& v) {
  nb::list l;
  for (DType t : v) l.append(std::string(name(t)));
  return l;
}
nb::list major_list(const std::vector<Major>& v) {
  nb::list l;
  for (Major x : v) l.append(std::string(name(x)));
  return l;
}

/// `obj[key]` for mappings, `obj.key` otherwise; None when absent.
nb::object field(nb::handle obj, const char* key) {
  if (obj.is_none()) return nb::none();
  if (nb::isinstance<nb::dict>(obj)) {
    nb::dict d = nb::borrow<nb::dict>(obj);
    return d.contains(key) ? nb::borrow(d[key]) : nb::none();
  }
  return nb::getattr(obj, key, nb::none());
}

std::string what(const std::string& op, const char* key) { return op + ": metadata." + key; }

std::vector<DType> dtypes_of(nb::handle list, const std::string& op, const char* key) {
  std::vector<DType> out;
  std::string w = what(op, key);
  for (nb::handle item : list) out.push_back(to_dtype(item, w.c_str()));
  return out;
}

std::vector<Major> majors_of(nb::handle list, const std::string& op, const char* key) {
  std::vector<Major> out;
  for (nb::handle item : list) {
    std::string s = py_str(item);
    if (s == "k" || s == "k-major") out.push_back(Major::k);
    else if (s == "mn" || s == "mn-major") out.push_back(Major::mn);
    else throw nb::value_error((what(op, key) + ": must list \"k-major\" or \"mn-major\"; got '" + s + "'").c_str());
  }
  return out;
}

std::vector<OperationKind> kinds_of(nb::handle list, const std::string& op) {
  std::vector<OperationKind> out;
  for (nb::handle item : list) {
    std::string s = py_str(item);
    bool found = false;
    for (OperationKind k : kAllOperationKinds) {
      if (name(k) == s) out.push_back(k), found = true;
    }
    if (!found)
      throw nb::value_error((what(op, "constraints.kinds") +
                             ": must list gemm, batched_gemm, grouped_gemm_m, grouped_gemm_k or grouped_gemm_n; got '" + s + "'")
                                .c_str());
  }
  return out;
}

}  // namespace

nb::dict metadata_to_dict(const OperatorMetadata& md) {
  const Design& d = md.design;
  nb::dict design;
  design["tile"] = nb::make_tuple(d.tile_m, d.tile_n, d.tile_k);
  design["cluster"] = nb::make_tuple(d.cluster_m, d.cluster_n);
  design["stages"] = d.stages;
  design["schedule"] = std::string(name(d.schedule));
  design["epilogue"] = std::string(name(d.epilogue));
  design["epilogue_boxes"] = d.epilogue_boxes;
  design["name"] = d.to_string();

  const OperandConstraints& c = md.constraints;
  nb::dict constraints;
  nb::list kinds;
  for (OperationKind k : c.kinds) kinds.append(std::string(name(k)));
  constraints["kinds"] = kinds;
  constraints["a_dtypes"] = dtype_list(c.a_dtypes);
  constraints["b_dtypes"] = dtype_list(c.b_dtypes);
  constraints["out_dtypes"] = dtype_list(c.out_dtypes);
  constraints["accumulator_dtypes"] = dtype_list(c.accumulator_dtypes);
  constraints["a_b_same_dtype"] = c.a_b_same_dtype;
  constraints["a_majors"] = major_list(c.a_majors);
  constraints["b_majors"] = major_list(c.b_majors);
  constraints["out_row_major"] = c.out_row_major;
  constraints["k_grouped_out_m_major"] = c.k_grouped_out_m_major;
  constraints["alignment_bytes"] = c.alignment_bytes;
  constraints["device"] = c.device == Device::Kind::cuda ? "cuda" : "cpu";
  constraints["epilogue"] = epilogue_support_to_dict(c.epilogue);
  nb::dict scalings;  // fp8 scales served: empty lists serve none
  for (auto [key, list] : {std::pair{"a", &c.scalings.a}, std::pair{"b", &c.scalings.b}}) {
    nb::list names;
    for (ScaleGranularity g : *list) names.append(std::string(name(g)));
    scalings[key] = names;
  }
  nb::list layouts;
  for (ScaleLayout l : c.scalings.layouts) layouts.append(std::string(name(l)));
  scalings["layouts"] = layouts;
  constraints["scalings"] = scalings;

  nb::dict out;
  out["name"] = md.name;
  out["provider"] = md.provider;
  out["target"] = md.target.to_string();
  out["design"] = design;
  out["constraints"] = constraints;
  out["trial"] = md.trial;
  return out;
}

OperatorMetadata metadata_from_python(nb::handle obj, std::string op_name) {
  OperatorMetadata md;
  md.name = std::move(op_name);
  const std::string& op = md.name;
  nb::object v;
  md.provider = (v = field(obj, "provider")).is_none() ? "python" : py_str(v);
  md.target = (v = field(obj, "target")).is_none() ? Target::cpu() : unwrap(Target::parse(py_str(v)));

  nb::object design = field(obj, "design");
  md.design.schedule = Schedule::custom;
  if (!(v = field(design, "tile")).is_none()) {
    auto t = nb::cast<std::vector<int>>(v);
    if (t.size() != 3) throw nb::value_error((what(op, "design.tile") + ": must be (m, n, k)").c_str());
    md.design.tile_m = t[0], md.design.tile_n = t[1], md.design.tile_k = t[2];
  }
  if (!(v = field(design, "cluster")).is_none()) {
    auto c = nb::cast<std::vector<int>>(v);
    if (c.size() != 2) throw nb::value_error((what(op, "design.cluster") + ": must be (m, n)").c_str());
    md.design.cluster_m = c[0], md.design.cluster_n = c[1];
  }
  if (!(v = field(design, "stages")).is_none()) md.design.stages = nb::cast<int>(v);
  if (!(v = field(design, "schedule")).is_none()) {
    std::string s = py_str(v);
    bool found = false;
    for (Schedule x : kSchedules) {
      if (name(x) == s) md.design.schedule = x, found = true;
    }
    if (!found) throw nb::value_error((what(op, "design.schedule") + ": unknown schedule '" + s + "'").c_str());
  }

  nb::object c = field(obj, "constraints");
  OperandConstraints& k = md.constraints;
  k.device = md.target.is_cpu() ? Device::Kind::cpu : Device::Kind::cuda;
  if (!(v = field(c, "kinds")).is_none()) k.kinds = kinds_of(v, op);
  if (!(v = field(c, "a_dtypes")).is_none()) k.a_dtypes = dtypes_of(v, op, "constraints.a_dtypes");
  if (!(v = field(c, "b_dtypes")).is_none()) k.b_dtypes = dtypes_of(v, op, "constraints.b_dtypes");
  if (!(v = field(c, "out_dtypes")).is_none()) k.out_dtypes = dtypes_of(v, op, "constraints.out_dtypes");
  if (!(v = field(c, "accumulator_dtypes")).is_none())
    k.accumulator_dtypes = dtypes_of(v, op, "constraints.accumulator_dtypes");
  if (!(v = field(c, "a_b_same_dtype")).is_none()) k.a_b_same_dtype = nb::cast<bool>(v);
  if (!(v = field(c, "a_majors")).is_none()) k.a_majors = majors_of(v, op, "constraints.a_majors");
  if (!(v = field(c, "b_majors")).is_none()) k.b_majors = majors_of(v, op, "constraints.b_majors");
  if (!(v = field(c, "out_row_major")).is_none()) k.out_row_major = nb::cast<bool>(v);
  if (!(v = field(c, "k_grouped_out_m_major")).is_none()) k.k_grouped_out_m_major = nb::cast<bool>(v);
  if (!(v = field(c, "alignment_bytes")).is_none()) k.alignment_bytes = nb::cast<int>(v);
  if (!(v = field(c, "device")).is_none()) k.device = to_device(v, what(op, "constraints.device").c_str()).kind;
  k.epilogue = epilogue_support_from_python(field(c, "epilogue"), op);
  return md;
}

}  // namespace gemmops::python
