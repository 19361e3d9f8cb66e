// tests/unit/test_target.cpp: target parsing, printing and which operator targets a device runs
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "gemmops/target.hpp"

namespace gemmops {
namespace {

Target parse_ok(const char* text) {
  auto t = Target::parse(text);
  EXPECT_TRUE(t) << text << ": " << t.status().message();
  return t ? *t : Target{};
}

TEST(Target, parses_every_documented_spelling) {
  EXPECT_EQ(parse_ok("cpu"), Target::cpu());
  EXPECT_EQ(parse_ok("90a"), Target::sm(90, true));
  EXPECT_EQ(parse_ok("sm_90a"), Target::sm(90, true));
  EXPECT_EQ(parse_ok("sm90a"), Target::sm(90, true));
  EXPECT_EQ(parse_ok("90"), Target::sm(90));
  EXPECT_EQ(parse_ok("80"), Target::sm(80));
  EXPECT_EQ(parse_ok("100a"), Target::sm(100, true));
  EXPECT_EQ(parse_ok("SM_90A"), Target::sm(90, true));
}

TEST(Target, parse_rejects_garbage_with_the_text_seen) {
  for (const char* bad : {"", "a", "9", "sm_", "9x", "1000", "090", "90b", "gpu", "-90"}) {
    auto t = Target::parse(bad);
    EXPECT_FALSE(t) << bad;
    EXPECT_EQ(t.status().code(), ErrorCode::invalid_argument);
    EXPECT_EQ(t.status().message(), std::string("target: must be \"cpu\" or a compute capability like \"90a\", "
                                                "\"90\" or \"80\", optionally with a machine model (\"90a:h100_sxm\"); got \"") +
                                       bad + "\"");
  }
}

TEST(Target, to_string_round_trips) {
  for (const char* text : {"cpu", "90a", "90", "80", "100a", "120"}) {
    EXPECT_EQ(parse_ok(text).to_string(), text);
  }
}

TEST(Target, hopper_device_runs_90a_90_and_older_portable_code) {
  Target h100 = Target::sm(90, true);
  EXPECT_TRUE(h100.can_run(Target::sm(90, true)));
  EXPECT_TRUE(h100.can_run(Target::sm(90)));
  EXPECT_TRUE(h100.can_run(Target::sm(80)));
  EXPECT_TRUE(h100.can_run(Target::sm(70)));
}

TEST(Target, hopper_device_does_not_run_newer_or_other_arch_specific_code) {
  Target h100 = Target::sm(90, true);
  EXPECT_FALSE(h100.can_run(Target::sm(100, true)));
  EXPECT_FALSE(h100.can_run(Target::sm(100)));
  EXPECT_FALSE(h100.can_run(Target::sm(80, true)));
}

TEST(Target, portable_code_runs_on_later_devices_arch_specific_only_on_its_own) {
  EXPECT_TRUE(Target::sm(100, true).can_run(Target::sm(90)));
  EXPECT_FALSE(Target::sm(100, true).can_run(Target::sm(90, true)));
  EXPECT_FALSE(Target::sm(80).can_run(Target::sm(90)));
}

TEST(Target, cpu_runs_only_cpu_code_and_gpus_do_not_run_cpu_code) {
  EXPECT_TRUE(Target::cpu().can_run(Target::cpu()));
  EXPECT_FALSE(Target::cpu().can_run(Target::sm(80)));
  EXPECT_FALSE(Target::sm(90, true).can_run(Target::cpu()));
}

}  // namespace
}  // namespace gemmops
