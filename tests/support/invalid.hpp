// tests/support/invalid.hpp: the message of arguments validate() must refuse, for the one-test-per-rule files
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "gemmops/arguments.hpp"

namespace gemmops::testing {

/// validate()'s message for `args`, which it must refuse with invalid_argument (a failure otherwise).
inline std::string invalid(const Arguments& args) {
  Status s = validate(args);
  EXPECT_EQ(s.code(), ErrorCode::invalid_argument) << s.to_string();
  return s.message();
}

}  // namespace gemmops::testing
