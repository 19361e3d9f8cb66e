// tests/unit/test_cli_dispatch.cpp: the CLI's subcommand table: help for a command, usage errors
// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"

namespace gemmops::cli {
namespace {

struct Outcome {
  int exit_code;
  std::string out, err;
};

Outcome cli(std::initializer_list<std::string_view> words) {
  const std::vector<std::string_view> v(words);
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int code = dispatch(v);
  Outcome o{code, ::testing::internal::GetCapturedStdout(), ::testing::internal::GetCapturedStderr()};
  return o;
}

TEST(CliDispatch, help_with_a_command_prints_its_options_like_its_help_flag) {
  const Outcome help = cli({"help", "run"});
  EXPECT_EQ(help.exit_code, kExitOk);
  EXPECT_NE(help.out.find("usage: gemmops run [options]"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--out-dtype"), std::string::npos) << help.out;
  EXPECT_EQ(help.out, cli({"run", "--help"}).out);
  EXPECT_EQ(cli({"help", "list"}).out, cli({"list", "--help"}).out);
}

TEST(CliDispatch, help_alone_lists_the_commands) {
  const Outcome help = cli({"help"});
  EXPECT_EQ(help.exit_code, kExitOk);
  EXPECT_NE(help.out.find("usage: gemmops <command> [options]"), std::string::npos) << help.out;
  EXPECT_EQ(cli({"--help"}).out, help.out);
  EXPECT_EQ(cli({"help", "help"}).out, help.out);
}

TEST(CliDispatch, unknown_commands_and_no_command_are_usage_errors) {
  const Outcome unknown = cli({"help", "frobnicate"});
  EXPECT_EQ(unknown.exit_code, kExitUsage);
  EXPECT_EQ(unknown.err.rfind("gemmops help: unknown command 'frobnicate'", 0), 0u) << unknown.err;
  EXPECT_EQ(cli({"frobnicate"}).exit_code, kExitUsage);
  EXPECT_EQ(cli({}).exit_code, kExitUsage);
}

TEST(CliDispatch, run_refuses_rows_that_do_not_divide_into_the_batches) {
  const Outcome o = cli({"run", "--op", "batched", "--total-m", "100", "--groups", "12", "--device", "cpu"});
  EXPECT_EQ(o.exit_code, kExitUsage);
  EXPECT_EQ(o.err.rfind("gemmops run: --total-m: must divide into the 12 batches of --groups (L) for --op batched; "
                        "got '100'", 0), 0u) << o.err;
  EXPECT_EQ(o.out, "");
}

}  // namespace
}  // namespace gemmops::cli
