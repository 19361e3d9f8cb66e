// examples/minimal.cpp: one M-grouped GEMM through discovery, compile and run (GPU if any, else CPU)
// SPDX-License-Identifier: Apache-2.0
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gemmops/gemmops.hpp"

using namespace gemmops;

// bf16 is the top half of an fp32; the values below are exact in bf16.
uint16_t to_bf16(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return uint16_t(bits >> 16);
}

int main() {
  // Three experts; tokens 0..4 go to expert 0, 5..5 to expert 1, expert 2 gets none (empty group).
  const int64_t total_m = 6, groups = 3, k = 64, n = 32;
  std::vector<int32_t> offsets = {5, 6, 6};
  std::vector<uint16_t> a(total_m * k), b(groups * k * n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = to_bf16(float(int(i % 5) - 2) / 4);
  for (size_t i = 0; i < b.size(); ++i) b[i] = to_bf16(float(int(i % 7) - 3) / 8);
  std::vector<float> out(total_m * n, NAN);

  // On a GPU the operands live in device memory; without one, the CPU operator serves host memory.
  const bool gpu = device_count().has_value() && *device_count() > 0;
  const Device dev = gpu ? Device::cuda(0) : Device::cpu();
  DeviceBuffer d_a, d_b, d_out, d_off;
  void *pa = a.data(), *pb = b.data(), *pout = out.data(), *poff = offsets.data();
  if (gpu) {
    auto upload = [](DeviceBuffer& d, const void* src, size_t bytes) {
      d = std::move(DeviceBuffer::allocate(bytes).value());
      if (!d.copy_from_host(src, bytes)) std::abort();
      return d.data();
    };
    pa = upload(d_a, a.data(), a.size() * 2);
    pb = upload(d_b, b.data(), b.size() * 2);
    pout = upload(d_out, out.data(), out.size() * 4);
    poff = upload(d_off, offsets.data(), offsets.size() * 4);
  }

  GroupedGemmArguments args;
  args.A = TensorDesc::contiguous(DType::bf16, {total_m, k}, dev, pa);
  args.B = TensorDesc::contiguous(DType::bf16, {groups, k, n}, dev, pb);
  args.out = TensorDesc::contiguous(DType::fp32, {total_m, n}, dev, pout);
  args.offsets = TensorDesc::contiguous(DType::i32, {groups}, dev, poff);

  std::vector<OperatorPtr> ops = get_operators(args);
  if (ops.empty()) {
    for (const Rejection& r : get_rejections(args)) std::printf("rejected: %s\n", r.reason.to_string().c_str());
    return 1;
  }
  const Operator& op = *ops.front();
  Result<Artifact> artifact = op.compile(args);
  // Some operators want scratch memory for some sizes (split-K partials): ask, and provide it.
  DeviceBuffer d_workspace;
  Workspace workspace;
  if (const size_t bytes = op.workspace_size(args); bytes > 0) {
    d_workspace = std::move(DeviceBuffer::allocate(bytes).value());
    workspace = {d_workspace.data(), bytes};
  }
  Status status = artifact ? op.run(args, *artifact, nullptr, workspace) : artifact.status();
  if (status && gpu) status = synchronize();
  if (status && gpu) status = d_out.copy_to_host(out.data(), out.size() * 4);
  if (!status) {
    std::printf("%s: %s\n", op.name().c_str(), status.to_string().c_str());
    return 1;
  }

  // Check every element against a plain loop (exact: the inputs are small multiples of 1/8).
  int64_t bad = 0;
  for (int64_t g = 0, row = 0; g < groups; ++g)
    for (; row < offsets[g]; ++row)
      for (int64_t j = 0; j < n; ++j) {
        float ref = 0;
        for (int64_t x = 0; x < k; ++x)
          ref += float(int((row * k + x) % 5) - 2) / 4 * (float(int((g * k * n + x * n + j) % 7) - 3) / 8);
        bad += std::fabs(out[row * n + j] - ref) > 1e-5f * (1 + std::fabs(ref));
      }
  std::printf("%s on %s: %s\n", op.name().c_str(), dev.to_string().c_str(), bad ? "WRONG" : "ok");
  return bad ? 1 : 0;
}
