// include/gemmops/operator.hpp: the Operator interface (non-virtual public methods, private hooks)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "gemmops/arguments.hpp"
#include "gemmops/metadata.hpp"
#include "gemmops/status.hpp"
#include "gemmops/target.hpp"

namespace gemmops {

namespace detail {
class OperatorMemo;
}

/// Scratch memory the caller provides on the arguments' device; see Operator::workspace_size.
struct Workspace {
  void* data = nullptr;
  std::size_t bytes = 0;
};

/// Base of what an operator keeps in an artifact (a loaded kernel, a cubin, ...).
struct ArtifactImpl {
  virtual ~ArtifactImpl() = default;
};

/// What compile() returns: serves every problem size with the same dtypes and layouts.
/// Cheap to copy (shared), immutable, safe to use from several threads.
class Artifact {
 public:
  Artifact() = default;
  Artifact(std::string operator_name, std::shared_ptr<const ArtifactImpl> impl, std::string description)
      : operator_name_(std::move(operator_name)), impl_(std::move(impl)), description_(std::move(description)) {}

  bool empty() const { return operator_name_.empty(); }
  /// The operator that compiled it; run() refuses artifacts of other operators.
  const std::string& operator_name() const { return operator_name_; }
  /// Human-readable: the kernel, its cache key, where the cubin came from.
  const std::string& description() const { return description_; }
  /// The operator's own payload, or nullptr.
  template <class T>
  const T* get() const { return static_cast<const T*>(impl_.get()); }

 private:
  std::string operator_name_;
  std::shared_ptr<const ArtifactImpl> impl_;
  std::string description_;
};

/// An operator: one way to compute one family of operations. Public methods are final and do the
/// common checks; subclasses fill the private hooks. All methods are const and thread-safe.
class Operator {
 public:
  virtual ~Operator() = default;
  Operator(const Operator&) = delete;
  Operator& operator=(const Operator&) = delete;

  const OperatorMetadata& metadata() const { return metadata_; }
  const std::string& name() const { return metadata_.name; }

  /// ok when this operator can serve `args` on `target`: validate(args), the target, the metadata
  /// constraints, then supports_extra(). Needs no GPU and compiles nothing.
  Status supports(const Arguments& args, const Target& target) const;
  /// supports() on the operator's own target.
  Status supports(const Arguments& args) const { return supports(args, metadata_.target); }

  /// Compiles (or loads from cache) what run() needs. Fake tensors are fine. Needs no GPU for
  /// operators whose compile is a JIT to a cubin; loading onto a device happens on first run.
  Result<Artifact> compile(const Arguments& args) const;

  /// Bytes of workspace run() needs for `args` (0 for most operators).
  std::size_t workspace_size(const Arguments& args) const;

  /// Launches asynchronously on `stream` (no host synchronisation: safe to capture in a CUDA graph).
  /// Refuses fake tensors, unsupported arguments, artifacts of other operators and too small a
  /// workspace. An empty `artifact` compiles first (from the in-memory cache after the first call).
  Status run(const Arguments& args, const Artifact& artifact = {}, Stream stream = nullptr,
             Workspace workspace = {}) const;

  /// A rough estimate of run time in microseconds, used to order get_operators(); lower is better.
  /// Unknown (the default) sorts last.
  double estimated_time_us(const Arguments& args, const Target& target) const;

  /// True when supports_extra() and do_estimated_time_us() read nothing of the arguments but their
  /// dtypes, shapes, strides, devices, the alignment of their data pointers and whether they have
  /// data (a fake tensor): then supports(), estimated_time_us() and discovery answer each such layout
  /// once and remember it (run() re-checks only where the data points). The built-in operators say
  /// yes; the default is no.
  virtual bool answers_by_signature() const { return false; }

 protected:
  explicit Operator(OperatorMetadata metadata);

 private:
  Status supports_uncached(const Arguments& args, const Target& target) const;

  virtual Status supports_extra(const Arguments&, const Target&) const { return Status::ok(); }
  virtual Result<Artifact> do_compile(const Arguments& args) const = 0;
  virtual std::size_t do_workspace_size(const Arguments&) const { return 0; }
  virtual Status do_run(const Arguments& args, const Artifact& artifact, Stream stream,
                        Workspace workspace) const = 0;
  virtual double do_estimated_time_us(const Arguments&, const Target&) const;

  OperatorMetadata metadata_;
  std::shared_ptr<detail::OperatorMemo> memo_;
};

using OperatorPtr = std::shared_ptr<const Operator>;

}  // namespace gemmops
