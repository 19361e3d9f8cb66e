// include/gemmops/registry.hpp: discovery (get_operators) and bring-your-own registration
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "gemmops/operator.hpp"

namespace gemmops {

namespace detail {
class RankingMemo;
}

/// An operator that was not chosen, and the first reason why.
struct Rejection {
  OperatorPtr op;
  Status reason;
};

/// A set of operators, searchable by arguments. Thread-safe.
class Registry {
 public:
  Registry();

  /// Adds `op`; invalid_argument if it is null or another operator already has its name.
  Status add(OperatorPtr op);
  /// Every operator that supports `args` on `target`, best first (lowest estimated time; ties keep
  /// registration order, so the order is stable).
  std::vector<OperatorPtr> get_operators(const Arguments& args, const Target& target) const;
  /// Every operator that does not support `args` on `target`, with its reason, registration order.
  std::vector<Rejection> rejections(const Arguments& args, const Target& target) const;
  std::vector<OperatorPtr> all() const;
  OperatorPtr find(std::string_view name) const;

 private:
  mutable std::mutex mutex_;
  std::vector<OperatorPtr> ops_;
  /// The operators that do not answer by signature, with their places in ops_.
  std::vector<std::pair<std::size_t, OperatorPtr>> asked_every_call_;
  /// get_operators' ranking of the operators that answer by signature, per signature (cleared by add).
  std::shared_ptr<detail::RankingMemo> ranking_;
};

/// The process-wide registry, holding the built-in providers (sm90, simt, CPU) on first use.
Registry& default_registry();

/// The target discovery uses when none is given: "cpu" for host tensors; for CUDA tensors the
/// device's target, else GEMMOPS_TARGET; no_device when neither is known.
Result<Target> default_target(const Arguments& args);

/// default_registry().get_operators(args, target or default_target(args)); empty when no target.
std::vector<OperatorPtr> get_operators(const Arguments& args, std::optional<Target> target = {});
/// The reasons the others were not chosen (with the default-target failure when there is one).
std::vector<Rejection> get_rejections(const Arguments& args, std::optional<Target> target = {});

/// Adds a user's operator to the default registry, where get_operators() finds it.
Status register_operator(OperatorPtr op);

}  // namespace gemmops
