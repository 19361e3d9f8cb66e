// tests/support/fake_operator.hpp: an Operator whose hooks record calls and answer what a test sets
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <functional>
#include <limits>
#include <memory>
#include <string>

#include "gemmops/operator.hpp"

namespace gemmops::testing {

/// Serves what its constraints say; the hooks count calls and return configurable answers.
class FakeOperator : public Operator {
 public:
  struct Options {
    std::string name = "fake";
    OperandConstraints constraints;
    Target target = Target::cpu();
    double estimate_us = std::numeric_limits<double>::infinity();
    Status extra = Status::ok();        ///< what supports_extra answers
    std::size_t workspace = 0;
    std::string artifact_name;          ///< empty: the operator's own name
    bool by_signature = false;          ///< what answers_by_signature says
    bool trial = false;                 ///< OperatorMetadata::trial
    std::function<void()> on_compile;   ///< called inside each compile (may be called on any thread)
    std::function<void()> on_run;       ///< called inside each run
  };

  explicit FakeOperator(Options o) : Operator(metadata_of(o)), o_(std::move(o)) {}

  static std::shared_ptr<FakeOperator> make(Options o) { return std::make_shared<FakeOperator>(std::move(o)); }

  mutable std::atomic<int> extra_calls{0}, compile_calls{0}, run_calls{0};

  bool answers_by_signature() const override { return o_.by_signature; }

 private:
  static OperatorMetadata metadata_of(const Options& o) {
    OperatorMetadata m;
    m.name = o.name;
    m.provider = "test";
    m.constraints = o.constraints;
    m.target = o.target;
    m.trial = o.trial;
    m.constraints.device = o.target.is_cpu() ? Device::Kind::cpu : Device::Kind::cuda;
    return m;
  }
  Status supports_extra(const Arguments&, const Target&) const override {
    ++extra_calls;
    return o_.extra;
  }
  Result<Artifact> do_compile(const Arguments&) const override {
    ++compile_calls;
    if (o_.on_compile) o_.on_compile();
    return Artifact(o_.artifact_name.empty() ? name() : o_.artifact_name, nullptr, "fake artifact");
  }
  std::size_t do_workspace_size(const Arguments&) const override { return o_.workspace; }
  Status do_run(const Arguments&, const Artifact&, Stream, Workspace) const override {
    ++run_calls;
    if (o_.on_run) o_.on_run();
    return Status::ok();
  }
  double do_estimated_time_us(const Arguments&, const Target&) const override { return o_.estimate_us; }

  Options o_;
};

}  // namespace gemmops::testing
