// tests/support/ptxas_log.hpp: reading a kernel compile's ptxas log in the compile tests (register use,
// spills, wgmma serialisation), and test labels made of a design's name
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iostream>
#include <string>

#include "jit/compile.hpp"

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

/// The largest "N bytes spill stores" of the log (0 without any).
inline int max_spill_store_bytes(const std::string& log) {
  int most = 0;
  const std::string what = " bytes spill stores";
  for (std::size_t at = log.find(what); at != std::string::npos; at = log.find(what, at + 1)) {
    std::size_t start = at;
    while (start > 0 && std::isdigit(static_cast<unsigned char>(log[start - 1]))) --start;
    if (start < at) most = std::max(most, std::atoi(log.substr(start, at - start).c_str()));
  }
  return most;
}

/// Compiles `req` uncached (a cubin from the disk cache comes without ptxas's log) with ptxas's
/// register and spill report, expects no wgmma serialisation and (outside the watchdog build) no
/// spill in any function, and records the register use under `label`. `allowed_spill_bytes`: a
/// trial path's known spill, at most that many bytes (the trial's documented limitation).
inline void expect_clean_compile(jit::CompileRequest req, const std::string& label, int allowed_spill_bytes = 0) {
  req.options.push_back("--ptxas-options=-v");
  auto key = jit::cache_key(req);
  ASSERT_TRUE(key) << key.status().to_string();
  auto compiled = jit::compile_uncached(req, *key);
  ASSERT_TRUE(compiled) << compiled.status().to_string();
  EXPECT_EQ(compiled->log.find("wgmma.mma_async instructions are serialized"), std::string::npos) << compiled->log;
  if (allowed_spill_bytes > 0) {
    EXPECT_LE(max_spill_store_bytes(compiled->log), allowed_spill_bytes) << compiled->log;
  } else if (std::getenv("GEMMOPS_KERNEL_WATCHDOG") == nullptr) {
    EXPECT_EQ(compiled->log.find("spilled"), std::string::npos) << compiled->log;
    // Every function ptxas reports (the kernel) with no spill traffic.
    EXPECT_EQ(count(compiled->log, " bytes spill stores"), count(compiled->log, ", 0 bytes spill stores, 0 bytes spill loads"))
        << compiled->log;
  }
  ::testing::Test::RecordProperty("ptxas", ptxas_usage(compiled->log));
  std::cout << "[ ptxas    ] " << label << ": " << ptxas_usage(compiled->log) << "\n";
}

}  // namespace gemmops::testing
