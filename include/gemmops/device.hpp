// include/gemmops/device.hpp: the little device runtime users of the C++ API need (memory, sync, timing)
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <memory>

#include "gemmops/operator.hpp"
#include "gemmops/status.hpp"

namespace gemmops {

/// Number of CUDA devices; no_device when the driver cannot be loaded.
Result<int> device_count();

/// Device memory on one CUDA device, freed on destruction (errors on free are logged, not thrown).
/// Move-only. All copies are synchronous with respect to the host unless named *_async.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  /// out_of_memory or no_device on failure.
  static Result<DeviceBuffer> allocate(std::size_t bytes, int ordinal = 0);

  void* data() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  int ordinal() const { return ordinal_; }

  Status copy_from_host(const void* src, std::size_t bytes, std::size_t offset = 0);
  Status copy_to_host(void* dst, std::size_t bytes, std::size_t offset = 0) const;
  /// Sets every byte to `value` (e.g. 0xFF to poison an output).
  Status fill_bytes(unsigned char value);

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  int ordinal_ = 0;
};

/// Waits for all work on `stream` (nullptr: the whole device `ordinal`).
Status synchronize(Stream stream = nullptr, int ordinal = 0);

/// Device-side timing with CUDA events on one stream.
class EventTimer {
 public:
  static Result<EventTimer> create(int ordinal = 0);
  EventTimer(EventTimer&&) noexcept;
  EventTimer& operator=(EventTimer&&) noexcept;
  ~EventTimer();
  Status start(Stream stream = nullptr);
  Status stop(Stream stream = nullptr);
  /// Waits for the stop event; milliseconds between start and stop.
  Result<float> elapsed_ms() const;
  /// The same, waiting at most `timeout_ms` of wall time for the stop event: past it, a
  /// driver_error Status saying so (the work may still be running on the device).
  Result<float> elapsed_ms(double timeout_ms) const;

 private:
  EventTimer() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gemmops
