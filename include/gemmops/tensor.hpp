// include/gemmops/tensor.hpp: TensorDesc, a description of an operand that may carry no data ("fake")
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gemmops/dtype.hpp"

namespace gemmops {

/// Where a tensor's memory lives.
struct Device {
  enum class Kind { cpu, cuda };
  Kind kind = Kind::cpu;
  int index = 0;  ///< CUDA ordinal; 0 for cpu

  static Device cpu() { return {Kind::cpu, 0}; }
  static Device cuda(int index = 0) { return {Kind::cuda, index}; }
  bool is_cuda() const { return kind == Kind::cuda; }
  /// "cpu" or "cuda:N".
  std::string to_string() const;
  friend bool operator==(const Device&, const Device&) = default;
};

/// A CUDA stream (CUstream / cudaStream_t); nullptr is the legacy default stream.
using Stream = void*;

/// Which dimension of a matrix operand is contiguous. For A (.., M, K) and B (.., K, N):
/// `k` means the K dimension has stride 1, `mn` means the M (for A) or N (for B) dimension has.
enum class Major { k, mn };
std::string_view name(Major m);  ///< "k-major" / "mn-major"

/// A strided tensor of rank 1..3. Strides are in elements and may be any non-negative value;
/// rules on them (contiguity, alignment) belong to operations and operators, not to the description.
/// A tensor without `data` is fake: it is allowed for discovery and compile, refused by run.
struct TensorDesc {
  DType dtype = DType::fp32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  Device device;
  void* data = nullptr;

  TensorDesc() = default;
  TensorDesc(DType dtype, std::vector<int64_t> shape, std::vector<int64_t> strides, Device device,
             void* data = nullptr)
      : dtype(dtype), shape(std::move(shape)), strides(std::move(strides)), device(device), data(data) {}

  /// Row-major (last dimension contiguous) tensor.
  static TensorDesc contiguous(DType dtype, std::vector<int64_t> shape, Device device = Device::cpu(),
                               void* data = nullptr);

  int rank() const { return static_cast<int>(shape.size()); }
  bool is_fake() const { return data == nullptr; }
  /// Size of dimension `dim`; negative counts from the end (-1 = last). Precondition: in range.
  int64_t size(int dim) const;
  int64_t stride(int dim) const;
  int64_t numel() const;
  /// Bytes from the first to one past the last addressable element (0 when numel() == 0).
  int64_t span_bytes() const;
  /// "bf16 (8192, 1024) strides (1024, 1) on cuda:0" (and ", fake" without data).
  std::string describe() const;
  /// "(8192, 1024)".
  std::string shape_string() const;
};

/// Major of the last two dimensions (rows, cols) when one of them has stride 1 (cols checked first,
/// so a (1, 1) matrix is row-major). `cols_is_k` says whether the column dimension is K.
/// Returns false when neither dimension is contiguous.
bool matrix_major(const TensorDesc& t, bool cols_is_k, Major* major);

}  // namespace gemmops
