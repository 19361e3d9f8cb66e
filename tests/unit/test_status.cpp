// tests/unit/test_status.cpp: Status, Result and the GEMMOPS_TRY helpers
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "gemmops/assert.hpp"
#include "gemmops/status.hpp"

namespace gemmops {
namespace {

TEST(Status, default_is_ok_and_prints_ok) {
  Status s;
  EXPECT_TRUE(s.is_ok());
  EXPECT_TRUE(static_cast<bool>(s));
  EXPECT_EQ(s.to_string(), "ok");
}

TEST(Status, to_string_prefixes_the_code) {
  Status s = invalid_argument("offsets: must be int32");
  EXPECT_FALSE(s);
  EXPECT_EQ(s.code(), ErrorCode::invalid_argument);
  EXPECT_EQ(s.to_string(), "invalid_argument: offsets: must be int32");
}

TEST(Status, every_code_has_a_lower_case_name) {
  EXPECT_EQ(to_string(ErrorCode::ok), "ok");
  EXPECT_EQ(to_string(ErrorCode::invalid_argument), "invalid_argument");
  EXPECT_EQ(to_string(ErrorCode::unsupported), "unsupported");
  EXPECT_EQ(to_string(ErrorCode::no_device), "no_device");
  EXPECT_EQ(to_string(ErrorCode::compile_failed), "compile_failed");
  EXPECT_EQ(to_string(ErrorCode::driver_error), "driver_error");
  EXPECT_EQ(to_string(ErrorCode::out_of_memory), "out_of_memory");
  EXPECT_EQ(to_string(ErrorCode::internal), "internal");
}

TEST(Status, helpers_set_their_code) {
  EXPECT_EQ(unsupported("x").code(), ErrorCode::unsupported);
  EXPECT_EQ(no_device("x").code(), ErrorCode::no_device);
  EXPECT_EQ(compile_failed("x").code(), ErrorCode::compile_failed);
  EXPECT_EQ(driver_error("x").code(), ErrorCode::driver_error);
  EXPECT_EQ(internal_error("x").code(), ErrorCode::internal);
}

Status fails_then_continues(bool fail, int* reached) {
  GEMMOPS_TRY(fail ? unsupported("stop") : Status::ok());
  ++*reached;
  return Status::ok();
}

TEST(Status, try_returns_the_first_failure) {
  int reached = 0;
  EXPECT_EQ(fails_then_continues(true, &reached).message(), "stop");
  EXPECT_EQ(reached, 0);
  EXPECT_TRUE(fails_then_continues(false, &reached));
  EXPECT_EQ(reached, 1);
}

Result<int> half(int x) {
  if (x % 2 != 0) return invalid_argument("x: must be even; got " + std::to_string(x));
  return x / 2;
}

Status quarter(int x, int* out) {
  GEMMOPS_ASSIGN_OR_RETURN(int h, half(x));
  GEMMOPS_ASSIGN_OR_RETURN(*out, half(h));
  return Status::ok();
}

TEST(Result, holds_a_value_or_a_status) {
  Result<int> ok = half(4);
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, 2);
  EXPECT_TRUE(ok.status());
  Result<int> bad = half(3);
  EXPECT_FALSE(bad);
  EXPECT_EQ(bad.status().message(), "x: must be even; got 3");
}

TEST(Result, assign_or_return_unwraps_and_propagates) {
  int out = 0;
  EXPECT_TRUE(quarter(8, &out));
  EXPECT_EQ(out, 2);
  EXPECT_EQ(quarter(6, &out).message(), "x: must be even; got 3");
}

TEST(AssertDeathTest, assert_prints_location_condition_and_message_then_aborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(GEMMOPS_ASSERT(1 + 1 == 3, "arithmetic broke"),
               "test_status.cpp:[0-9]+: assertion failed: 1 \\+ 1 == 3: arithmetic broke");
}

}  // namespace
}  // namespace gemmops
