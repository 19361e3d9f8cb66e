// src/registry/registry.cpp: Registry: operators in registration order, searched best first
// SPDX-License-Identifier: Apache-2.0
#include "gemmops/registry.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace gemmops {

Status Registry::add(OperatorPtr op) {
  if (op == nullptr) return invalid_argument("operator: must not be null");
  if (op->name().empty()) return invalid_argument("operator: must have a name; got an empty one");
  std::lock_guard<std::mutex> lock(mutex_);
  for (const OperatorPtr& o : ops_) {
    if (o->name() == op->name()) {
      return invalid_argument("operator: name must be unique; \"" + op->name() + "\" is already registered");
    }
  }
  ops_.push_back(std::move(op));
  return Status::ok();
}

std::vector<OperatorPtr> Registry::get_operators(const Arguments& args, const Target& target) const {
  struct Ranked {
    OperatorPtr op;
    double time_us;
  };
  std::vector<Ranked> ranked;
  // Asked outside the lock: supports() is pure and may be slow; a snapshot is enough.
  for (const OperatorPtr& op : all()) {
    if (!op->supports(args, target)) continue;
    double t = op->estimated_time_us(args, target);
    // NaN would break the strict weak ordering of the sort; treat it as unknown.
    if (std::isnan(t)) t = std::numeric_limits<double>::infinity();
    ranked.push_back({op, t});
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Ranked& a, const Ranked& b) { return a.time_us < b.time_us; });
  std::vector<OperatorPtr> out;
  out.reserve(ranked.size());
  for (Ranked& r : ranked) out.push_back(std::move(r.op));
  return out;
}

std::vector<Rejection> Registry::rejections(const Arguments& args, const Target& target) const {
  std::vector<Rejection> out;
  for (const OperatorPtr& op : all()) {
    Status s = op->supports(args, target);  // the first failing rule, as supports() checks in order
    if (!s) out.push_back({op, std::move(s)});
  }
  return out;
}

std::vector<OperatorPtr> Registry::all() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ops_;
}

OperatorPtr Registry::find(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const OperatorPtr& op : ops_) {
    if (op->name() == name) return op;
  }
  return nullptr;
}

}  // namespace gemmops
