// tests/support/ptxas_log.hpp: reading a kernel compile's ptxas log in the compile tests (register use,
// counts of a warning), and test labels made of a design's name
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cctype>
#include <string>

namespace gemmops::testing {

/// "ptxas info    : Used 168 registers, ..." lines of the log of a -v compile, joined.
inline std::string ptxas_usage(const std::string& log) {
  std::string lines;
  for (std::size_t at = log.find("Used "); at != std::string::npos; at = log.find("Used ", at + 1))
    lines += log.substr(at, log.find('\n', at) - at) + "; ";
  return lines;
}

/// How often `what` occurs in `text`.
inline int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// `name` with every character gtest refuses in a test name replaced by '_'.
inline std::string test_label(std::string name) {
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

}  // namespace gemmops::testing
