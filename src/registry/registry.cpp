// src/registry/registry.cpp: Registry: operators in registration order, searched best first
// SPDX-License-Identifier: Apache-2.0
#include "gemmops/registry.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "arguments/rules.hpp"
#include "core/env.hpp"
#include "registry/ranking_memo.hpp"

namespace gemmops {
namespace {

using detail::Ranked;

// A trial design (not yet verified on hardware) is offered only on request (`trial_allowed`, the
// opt-in read once a call): a kernel path that has not passed the GPU suite must not reach users by default.
bool withheld_as_trial(const Operator& op, bool trial_allowed) { return op.metadata().trial && !trial_allowed; }

Status trial_rejection(const Operator& op) {
  return unsupported(op.name() + " is a trial design, not yet verified on hardware: offered only with "
                     "GEMMOPS_TRIAL_DESIGNS=1");
}

// Appends `op` (registered `index`-th) when it supports `args`, with its estimate.
void collect(const Arguments& args, const Target& target, const OperatorPtr& op, std::size_t index,
             std::vector<Ranked>& out) {
  if (!op->supports(args, target)) return;
  double t = op->estimated_time_us(args, target);
  // NaN would break the strict weak ordering of the sort; treat it as unknown.
  if (std::isnan(t)) t = std::numeric_limits<double>::infinity();
  out.push_back({op, t, index});
}

void sort_best_first(std::vector<Ranked>& ranked) {
  std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    return a.time_us < b.time_us || (a.time_us == b.time_us && a.index < b.index);
  });
}

}  // namespace

Registry::Registry() : ranking_(std::make_shared<detail::RankingMemo>()) {}

Status Registry::add(OperatorPtr op) {
  if (op == nullptr) return invalid_argument("operator: must not be null");
  if (op->name().empty()) return invalid_argument("operator: must have a name; got an empty one");
  std::lock_guard<std::mutex> lock(mutex_);
  for (const OperatorPtr& o : ops_) {
    if (o->name() == op->name()) {
      return invalid_argument("operator: name must be unique; \"" + op->name() + "\" is already registered");
    }
  }
  if (!op->answers_by_signature()) asked_every_call_.emplace_back(ops_.size(), op);
  ops_.push_back(std::move(op));
  ranking_->clear();  // rankings were made without it
  return Status::ok();
}

// Operators that answer by signature are ranked once per signature; the others (a user's operator
// whose supports() may read data) are asked on every call and merged in. Either way every call
// checks where the data points (out overlapping an input) and the epilogue's scalars, which no
// signature holds.
std::vector<OperatorPtr> Registry::get_operators(const Arguments& args, const Target& target) const {
  const detail::Signature sig = detail::has_host_offset_values(args) ? detail::Signature{}
                                                                     : detail::signature_of(args, target);
  std::vector<Ranked> ranked;
  auto by_signature = [&] {
    const std::vector<OperatorPtr> ops = all();
    for (std::size_t i = 0; i < ops.size(); ++i)
      if (ops[i]->answers_by_signature()) collect(args, target, ops[i], i, ranked);
  };
  if (!sig.valid) {
    by_signature();
  } else if (!detail::validate_per_call(args)) {
    // Overlapping memory or a bad epilogue alpha or limit is refused by every operator (the rules
    // are validate()'s); only operators that do not answer by signature are asked below, and they
    // refuse too unless they skip validate().
  } else if (auto hit = ranking_->find(sig)) {
    ranked = std::move(*hit);
  } else {
    const std::uint64_t generation = ranking_->generation();
    by_signature();
    sort_best_first(ranked);
    ranking_->put(sig, ranked, generation);
  }
  std::vector<std::pair<std::size_t, OperatorPtr>> others;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    others = asked_every_call_;
  }
  if (!others.empty()) {
    for (const auto& [index, op] : others) collect(args, target, op, index, ranked);
    sort_best_first(ranked);
  }
  std::vector<OperatorPtr> out;
  out.reserve(ranked.size());
  const bool trial_allowed = env::trial_designs();  // trial designs stay in the memo: read per call
  for (Ranked& r : ranked)
    if (!withheld_as_trial(*r.op, trial_allowed)) out.push_back(std::move(r.op));
  return out;
}

std::vector<Rejection> Registry::rejections(const Arguments& args, const Target& target) const {
  const bool trial_allowed = env::trial_designs();
  std::vector<Rejection> out;
  for (const OperatorPtr& op : all()) {
    Status s = op->supports(args, target);  // the first failing rule, as supports() checks in order
    if (s && withheld_as_trial(*op, trial_allowed)) s = trial_rejection(*op);
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
