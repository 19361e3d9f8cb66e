// src/core/status.cpp: names of error codes and the one-line form of a Status
// SPDX-License-Identifier: Apache-2.0
#include "gemmops/status.hpp"

namespace gemmops {

std::string_view to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::ok: return "ok";
    case ErrorCode::invalid_argument: return "invalid_argument";
    case ErrorCode::unsupported: return "unsupported";
    case ErrorCode::no_device: return "no_device";
    case ErrorCode::compile_failed: return "compile_failed";
    case ErrorCode::driver_error: return "driver_error";
    case ErrorCode::out_of_memory: return "out_of_memory";
    case ErrorCode::internal: return "internal";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  std::string s(gemmops::to_string(code_));
  s += ": ";
  s += message_;
  return s;
}

}  // namespace gemmops
