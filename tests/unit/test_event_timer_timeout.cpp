// tests/unit/test_event_timer_timeout.cpp: EventTimer::elapsed_ms(timeout) gives up on work that never
// finishes (a deadlocked kernel) instead of blocking its caller; on the fake driver
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>

#include "gemmops/device.hpp"
#include "support/fake_driver.hpp"

namespace gemmops {
namespace {

struct FakeEvents {
  static inline bool done = false;  // what cuEventQuery answers for the stop event
  static void install(cuda::DriverApi& api) {
    api.cuEventCreate = [](CUevent* e, unsigned) {
      static int n = 0;
      *e = reinterpret_cast<CUevent>(std::uintptr_t{0x2000} + ++n);
      return CUDA_SUCCESS;
    };
    api.cuEventRecord = [](CUevent, CUstream) { return CUDA_SUCCESS; };
    api.cuEventQuery = [](CUevent) { return done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY; };
    api.cuEventSynchronize = [](CUevent) { return CUDA_SUCCESS; };
    api.cuEventElapsedTime = [](float* ms, CUevent, CUevent) {
      *ms = 1.5f;
      return CUDA_SUCCESS;
    };
    api.cuEventDestroy = [](CUevent) { return CUDA_SUCCESS; };
  }
};

// A timer around nothing on the fake driver, whose stop event completes when `done` says.
EventTimer started_and_stopped(testing::ScopedFakeDriver& driver, bool done) {
  FakeEvents::install(driver.api());
  FakeEvents::done = done;
  auto timer = EventTimer::create(0);
  EXPECT_TRUE(timer) << timer.status().to_string();
  EXPECT_TRUE(timer->start());
  EXPECT_TRUE(timer->stop());
  return std::move(*timer);
}

TEST(EventTimerTimeout, work_that_never_finishes_is_reported_after_the_timeout_not_waited_for) {
  testing::ScopedFakeDriver driver;
  EventTimer timer = started_and_stopped(driver, false);
  const auto t0 = std::chrono::steady_clock::now();
  const Result<float> ms = timer.elapsed_ms(50.0);
  const double waited = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(ms);
  EXPECT_EQ(ms.status().code(), ErrorCode::driver_error);
  EXPECT_NE(ms.status().message().find("did not complete within 50 ms"), std::string::npos) << ms.status().message();
  EXPECT_GE(waited, 45.0);
  EXPECT_LT(waited, 2000.0);
}

TEST(EventTimerTimeout, finished_work_gives_its_time) {
  testing::ScopedFakeDriver driver;
  EventTimer timer = started_and_stopped(driver, true);
  const Result<float> ms = timer.elapsed_ms(50.0);
  ASSERT_TRUE(ms) << ms.status().to_string();
  EXPECT_FLOAT_EQ(*ms, 1.5f);
}

}  // namespace
}  // namespace gemmops
