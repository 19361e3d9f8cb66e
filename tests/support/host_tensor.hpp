// tests/support/host_tensor.hpp: HostTensor, a TensorDesc with its own host storage, and element access
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <numeric>
#include <span>
#include <vector>

#include "cpu/convert.hpp"
#include "gemmops/tensor.hpp"

namespace gemmops::testing {

/// The value of the element at `p` of dtype `t`, exactly (every dtype fits in a double).
inline double load_element(DType t, const std::byte* p) {
  uint16_t h = 0;
  switch (t) {
    case DType::fp32: { float f; std::memcpy(&f, p, 4); return f; }
    case DType::i32: { int32_t i; std::memcpy(&i, p, 4); return i; }
    case DType::bf16: std::memcpy(&h, p, 2); return cpu::bf16_to_float(h);
    case DType::fp16: std::memcpy(&h, p, 2); return cpu::fp16_to_float(h);
    case DType::e4m3: return cpu::e4m3_to_float(static_cast<uint8_t>(*p));
    case DType::e5m2: return cpu::e5m2_to_float(static_cast<uint8_t>(*p));
  }
  return 0;
}

/// Stores `v` rounded to `t` (through float, nearest even; i32 truncates).
inline void store_element(DType t, std::byte* p, double v) {
  const auto f = static_cast<float>(v);
  uint16_t h = 0;
  switch (t) {
    case DType::fp32: std::memcpy(p, &f, 4); return;
    case DType::i32: { auto i = static_cast<int32_t>(v); std::memcpy(p, &i, 4); return; }
    case DType::bf16: h = cpu::float_to_bf16(f); std::memcpy(p, &h, 2); return;
    case DType::fp16: h = cpu::float_to_fp16(f); std::memcpy(p, &h, 2); return;
    case DType::e4m3: *p = static_cast<std::byte>(cpu::float_to_e4m3(f)); return;
    case DType::e5m2: *p = static_cast<std::byte>(cpu::float_to_e5m2(f)); return;
  }
}

/// Element offset (in elements) of logical row-major index `linear` of `d`.
inline int64_t element_offset(const TensorDesc& d, int64_t linear) {
  int64_t offset = 0;
  for (int i = d.rank() - 1; i >= 0; --i) {
    const int64_t size = d.shape[static_cast<size_t>(i)];
    offset += (linear % size) * d.strides[static_cast<size_t>(i)];
    linear /= size;
  }
  return offset;
}

inline double read_logical(const TensorDesc& d, int64_t linear) {
  const auto* base = static_cast<const std::byte*>(d.data);
  return load_element(d.dtype, base + element_offset(d, linear) * static_cast<int64_t>(size_of(d.dtype)));
}

/// A host tensor that owns its bytes; desc.data always points into storage (copies rebind it).
/// Storage spans the strided layout plus one spare element, so even an empty tensor has data
/// (an empty tensor without data would count as fake) and stray writes past the end are caught.
struct HostTensor {
  TensorDesc desc;
  std::vector<std::byte> storage;

  HostTensor() = default;
  HostTensor(const HostTensor& o) : desc(o.desc), storage(o.storage) { rebind(); }
  HostTensor(HostTensor&& o) noexcept : desc(o.desc), storage(std::move(o.storage)) { rebind(); }
  HostTensor& operator=(const HostTensor& o) { desc = o.desc; storage = o.storage; rebind(); return *this; }
  HostTensor& operator=(HostTensor&& o) noexcept {
    desc = o.desc; storage = std::move(o.storage); rebind(); return *this;
  }

  /// Any strides (in elements), e.g. padded rows.
  static HostTensor strided(DType t, std::vector<int64_t> shape, std::vector<int64_t> strides) {
    HostTensor h;
    h.desc = TensorDesc(t, std::move(shape), std::move(strides), Device::cpu());
    h.storage.assign(static_cast<size_t>(h.desc.span_bytes()) + size_of(t), std::byte{0});
    h.rebind();
    return h;
  }
  /// Row-major.
  static HostTensor contiguous(DType t, std::vector<int64_t> shape) {
    std::vector<int> order(shape.size());
    std::iota(order.begin(), order.end(), 0);
    return permuted(t, std::move(shape), order);
  }
  /// Logical `shape` stored with its dimensions in `memory_order`, outermost first: a (G,K,N)
  /// tensor stored as (G,N,K) is permuted(t, {G,K,N}, {0,2,1}), strides (N*K, 1, K).
  static HostTensor permuted(DType t, std::vector<int64_t> shape, std::span<const int> memory_order) {
    std::vector<int64_t> strides(shape.size());
    int64_t s = 1;
    for (size_t i = memory_order.size(); i-- > 0;) {
      strides[static_cast<size_t>(memory_order[i])] = s;
      s *= std::max<int64_t>(shape[static_cast<size_t>(memory_order[i])], 1);
    }
    return strided(t, std::move(shape), std::move(strides));
  }
  static HostTensor permuted(DType t, std::vector<int64_t> shape, std::initializer_list<int> order) {
    return permuted(t, std::move(shape), std::span<const int>(order.begin(), order.size()));
  }

  int64_t numel() const { return desc.numel(); }
  std::byte* at(int64_t linear) {
    return storage.data() + element_offset(desc, linear) * static_cast<int64_t>(size_of(desc.dtype));
  }
  const std::byte* at(int64_t linear) const {
    return storage.data() + element_offset(desc, linear) * static_cast<int64_t>(size_of(desc.dtype));
  }
  double get(int64_t linear) const { return load_element(desc.dtype, at(linear)); }
  void set(int64_t linear, double v) { store_element(desc.dtype, at(linear), v); }
  /// Every byte 0xff: NaN in bf16, fp16 and fp32, so an unwritten element cannot pass as a value.
  void poison() { std::fill(storage.begin(), storage.end(), std::byte{0xff}); }

 private:
  void rebind() { desc.data = storage.empty() ? nullptr : storage.data(); }
};

}  // namespace gemmops::testing
