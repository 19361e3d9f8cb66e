// tests/unit/test_driver_absent.cpp: without libcuda.so.1 the driver layer answers no_device, never aborts
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "cuda/driver_api.hpp"
#include "gemmops/device.hpp"
#include "gemmops/target.hpp"

namespace gemmops {
namespace {

TEST(DriverAbsent, driver_returns_no_device_with_the_loader_message) {
  auto api = cuda::driver();
  if (api) GTEST_SKIP() << "a CUDA driver loaded on this machine";
  EXPECT_EQ(api.status().code(), ErrorCode::no_device);
  EXPECT_EQ(api.status().message().rfind("no CUDA driver: ", 0), 0u) << api.status().message();
}

TEST(DriverAbsent, public_device_functions_fail_cleanly) {
  if (cuda::driver()) GTEST_SKIP() << "a CUDA driver loaded on this machine";
  EXPECT_EQ(device_count().status().code(), ErrorCode::no_device);
  EXPECT_EQ(device_target(0).status().code(), ErrorCode::no_device);
  EXPECT_EQ(device_supports("90a").code(), ErrorCode::no_device);
  EXPECT_TRUE(device_supports("cpu"));
  EXPECT_EQ(DeviceBuffer::allocate(64).status().code(), ErrorCode::no_device);
  EXPECT_EQ(synchronize().code(), ErrorCode::no_device);
  EXPECT_EQ(EventTimer::create().status().code(), ErrorCode::no_device);
}

}  // namespace
}  // namespace gemmops
