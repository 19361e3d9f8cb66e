// src/core/metadata.cpp: schedule and design names, and the one function that names operators
// SPDX-License-Identifier: Apache-2.0
#include "gemmops/metadata.hpp"

#include <iterator>
#include <string>

namespace gemmops {

std::string_view name(Schedule s) {
  switch (s) {
    case Schedule::cpu_blocked: return "cpu";
    case Schedule::cooperative: return "coop";
    case Schedule::pingpong: return "pingpong";
    case Schedule::small_m: return "smallm";
    case Schedule::custom: return "custom";
    case Schedule::simt: return "simt";
  }
  return "unknown";
}

EpilogueSupport EpilogueSupport::all() {
  EpilogueSupport s;
  for (Activation a : kAllActivations)
    if (a != Activation::none) s.activations.push_back(a);
  s.gate_layouts.assign(std::begin(kAllGateLayouts), std::end(kAllGateLayouts));
  s.bias = s.row_scale = s.pre_activation = s.activation_grad = true;
  return s;
}

std::string Design::to_string() const {
  if (schedule == Schedule::cpu_blocked) return "cpu";
  std::string s;
  if (tile_m != 0 || tile_n != 0 || tile_k != 0) {
    for (int v : {tile_m, tile_n, tile_k}) {
      if (!s.empty()) s += 'x';
      s += std::to_string(v);
    }
    s += "_c";
    s += std::to_string(cluster_m);
    s += 'x';
    s += std::to_string(cluster_n);
    s += '_';
  }
  if (stages > 0) {
    s += 's';
    s += std::to_string(stages);
    s += '_';
  }
  s += name(schedule);
  if (epilogue == Epilogue::tma_store) {
    s += '_';
    s += name(epilogue);
    if (epilogue_boxes > 0) s += "_ring" + std::to_string(epilogue_boxes);
  }
  return s;
}

std::string_view name(Epilogue e) { return e == Epilogue::tma_store ? "tma" : "store"; }

namespace {
// "fp32" -> "f32": the accumulator part of a name reads "f32acc", as CUTLASS spells it.
std::string short_name(DType t) {
  std::string n(name(t));
  if (n.substr(0, 2) == "fp") n.erase(1, 1);
  return n;
}
}  // namespace

std::string make_operator_name(const Target& target, std::string_view operation, DType ab, DType out,
                               DType accumulator, const Design& design) {
  std::string s = target.is_cpu() ? std::string("cpu") : std::string("sm").append(target.to_string());
  s += "_";
  s += operation;
  s += "_";
  s += name(ab);
  if (out != ab) {
    s += "_";
    s += name(out);
  }
  s += '_';
  s += short_name(accumulator);
  s += "acc";
  std::string d = design.to_string();
  // A host operator's design is just "cpu", already said by the prefix.
  if (!(target.is_cpu() && d == "cpu")) {
    s += '_';
    s += d;
  }
  return s;
}

}  // namespace gemmops
