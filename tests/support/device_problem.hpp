// tests/support/device_problem.hpp: a HostProblem mirrored into device memory, for the gpu tier
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gemmops/device.hpp"
#include "gemmops/operator.hpp"
#include "gemmops/target.hpp"
#include "support/random_problems.hpp"

namespace gemmops::testing {

/// Skips the current test with the reason when no device runs operators for `target`.
#define GEMMOPS_SKIP_WITHOUT_DEVICE(target)                                     \
  do {                                                                          \
    ::gemmops::Status gemmops_dev_ = ::gemmops::device_supports(target);        \
    if (!gemmops_dev_) GTEST_SKIP() << gemmops_dev_.message();                  \
  } while (0)

/// Device copies of every operand's whole storage (poison bytes of out included), and
/// arguments whose descriptors point at them with the host strides.
struct DeviceProblem {
  DeviceBuffer A, B, out, offsets, workspace;
  Arguments args;

  /// Runs `op` on the default stream with the workspace it asks for (split-K partials).
  Status run(const Operator& op, const Artifact& artifact = {}) {
    const std::size_t bytes = op.workspace_size(args);
    if (bytes > workspace.bytes()) {
      GEMMOPS_ASSIGN_OR_RETURN(workspace, DeviceBuffer::allocate(bytes, workspace_ordinal()));
    }
    return op.run(args, artifact, nullptr, Workspace{bytes > 0 ? workspace.data() : nullptr, bytes});
  }

  static Result<DeviceProblem> upload(const HostProblem& h, int ordinal = 0) {
    DeviceProblem d;
    GEMMOPS_ASSIGN_OR_RETURN(d.A, copy(h.A, ordinal));
    GEMMOPS_ASSIGN_OR_RETURN(d.B, copy(h.B, ordinal));
    GEMMOPS_ASSIGN_OR_RETURN(d.out, copy(h.out, ordinal));
    if (!h.offsets.storage.empty()) {
      GEMMOPS_ASSIGN_OR_RETURN(d.offsets, copy(h.offsets, ordinal));
    }
    const Device dev = Device::cuda(ordinal);
    auto on_device = [&](const HostTensor& t, const DeviceBuffer& b) {
      TensorDesc desc = t.desc;
      desc.device = dev;
      desc.data = b.data();
      return desc;
    };
    if (h.spec.kind == OperationKind::gemm || h.spec.kind == OperationKind::batched_gemm) {
      d.args = GemmArguments{on_device(h.A, d.A), on_device(h.B, d.B), on_device(h.out, d.out), DType::fp32};
    } else {
      GroupedGemmArguments g{on_device(h.A, d.A), on_device(h.B, d.B), on_device(h.out, d.out), DType::fp32,
                             on_device(h.offsets, d.offsets), h.spec.zero_tail};
      g.group_alignment = h.spec.group_alignment;
      d.args = g;
    }
    return d;
  }

  /// out's device bytes back into a copy of the host tensor `like`.
  Result<HostTensor> download_out(const HostTensor& like) const {
    HostTensor r = like;
    GEMMOPS_TRY(out.copy_to_host(r.storage.data(), r.storage.size()));
    return r;
  }

 private:
  int workspace_ordinal() const { return A.ordinal(); }
  static Result<DeviceBuffer> copy(const HostTensor& t, int ordinal) {
    GEMMOPS_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::allocate(t.storage.size(), ordinal));
    GEMMOPS_TRY(b.copy_from_host(t.storage.data(), t.storage.size()));
    return b;
  }
};

/// A device copy of a host tensor's whole storage (poison and padding included).
inline Result<DeviceBuffer> upload(const HostTensor& t) {
  GEMMOPS_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::allocate(t.storage.size()));
  GEMMOPS_TRY(b.copy_from_host(t.storage.data(), t.storage.size()));
  return b;
}

/// `t`'s description pointing at its device copy `b` (device 0, the host strides).
inline TensorDesc on(const HostTensor& t, const DeviceBuffer& b) {
  TensorDesc d = t.desc;
  d.device = Device::cuda(0);
  d.data = b.data();
  return d;
}

}  // namespace gemmops::testing
