// src/cuda/event_timer.cpp: EventTimer of include/gemmops/device.hpp, two CUDA events
// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>

#include "core/log.hpp"
#include "cuda/context.hpp"
#include "cuda/driver_api.hpp"
#include "gemmops/device.hpp"

namespace gemmops {

struct EventTimer::Impl {
  const cuda::DriverApi* api = nullptr;
  int ordinal = 0;
  CUevent start = nullptr;
  CUevent stop = nullptr;
  bool started = false;
  bool stopped = false;

  /// Milliseconds between the two events, once the stop event has completed.
  Result<float> elapsed() const {
    float ms = 0.0f;
    GEMMOPS_CU(*api, cuEventElapsedTime, &ms, start, stop);
    return ms;
  }

  ~Impl() {
    for (CUevent e : {start, stop}) {
      if (e == nullptr) continue;
      CUresult r = api->cuEventDestroy(e);
      if (r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED)
        detail::log("EventTimer: " + cuda::check(*api, r, "cuEventDestroy").message());
    }
  }
};

Result<EventTimer> EventTimer::create(int ordinal) {
  GEMMOPS_ASSIGN_OR_RETURN(const cuda::DriverApi* api, cuda::driver());
  GEMMOPS_TRY(cuda::make_current(ordinal));
  auto impl = std::make_unique<Impl>();
  impl->api = api;
  impl->ordinal = ordinal;
  GEMMOPS_CU(*api, cuEventCreate, &impl->start, CU_EVENT_DEFAULT);
  GEMMOPS_CU(*api, cuEventCreate, &impl->stop, CU_EVENT_DEFAULT);
  EventTimer t;
  t.impl_ = std::move(impl);
  return t;
}

EventTimer::EventTimer(EventTimer&&) noexcept = default;
EventTimer& EventTimer::operator=(EventTimer&&) noexcept = default;
EventTimer::~EventTimer() = default;

Status EventTimer::start(Stream stream) {
  if (!impl_) return invalid_argument("EventTimer: used after being moved from");
  GEMMOPS_CU(*impl_->api, cuEventRecord, impl_->start, static_cast<CUstream>(stream));
  impl_->started = true;
  impl_->stopped = false;
  return Status::ok();
}

Status EventTimer::stop(Stream stream) {
  if (!impl_) return invalid_argument("EventTimer: used after being moved from");
  if (!impl_->started) return invalid_argument("EventTimer: stop() must follow start()");
  GEMMOPS_CU(*impl_->api, cuEventRecord, impl_->stop, static_cast<CUstream>(stream));
  impl_->stopped = true;
  return Status::ok();
}

Result<float> EventTimer::elapsed_ms() const {
  if (!impl_) return invalid_argument("EventTimer: used after being moved from");
  if (!impl_->stopped) return invalid_argument("EventTimer: elapsed_ms() needs start() then stop()");
  GEMMOPS_CU(*impl_->api, cuEventSynchronize, impl_->stop);
  return impl_->elapsed();
}

Result<float> EventTimer::elapsed_ms(double timeout_ms) const {
  if (!impl_) return invalid_argument("EventTimer: used after being moved from");
  if (!impl_->stopped) return invalid_argument("EventTimer: elapsed_ms() needs start() then stop()");
  // Polls rather than blocks, so a kernel that never finishes (a deadlock) cannot hang the caller.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(timeout_ms);
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    const CUresult r = impl_->api->cuEventQuery(impl_->stop);
    if (r == CUDA_SUCCESS) break;
    if (r != CUDA_ERROR_NOT_READY) return cuda::check(*impl_->api, r, "cuEventQuery");
    if (std::chrono::steady_clock::now() > deadline)
      return driver_error("the device work did not complete within " + std::to_string(std::llround(timeout_ms)) +
                          " ms (a kernel that never finishes, or one far too slow); it may still be running");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(2000));
  }
  return impl_->elapsed();
}

}  // namespace gemmops
