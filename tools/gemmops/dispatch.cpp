// tools/gemmops/dispatch.cpp: the gemmops CLI's table of subcommands, usage and `help [command]`
// SPDX-License-Identifier: Apache-2.0
#include <cstdio>
#include <string_view>

#include "commands.hpp"
#include "gemmops/version.hpp"

namespace gemmops::cli {
namespace {

int help_command(Words args);

struct Command {
  std::string_view name;
  std::string_view summary;
  int (*run)(Words);
};

constexpr Command kCommands[] = {
    {"run", "run one problem (default: the seed problem), check it, print time and TFLOP/s",
     run_command},
    {"list", "list the operators that support a problem, then the others with their reasons",
     list_command},
    {"help", "print this help, or with a command its options (as 'gemmops <command> --help')", help_command},
};

void print_usage(std::FILE* to) {
  std::fprintf(to, "gemmops %s: grouped and dense GEMM operators\n\nusage: gemmops <command> [options]\n\n",
               kVersion);
  for (const Command& c : kCommands) std::fprintf(to, "  %-6.*s %.*s\n", int(c.name.size()), c.name.data(),
                                                  int(c.summary.size()), c.summary.data());
  std::fprintf(to, "\n'gemmops <command> --help' lists the options of a command.\n");
}

const Command* find_command(std::string_view name) {
  for (const Command& c : kCommands)
    if (c.name == name) return &c;
  return nullptr;
}

int unknown_command(std::string_view caller, std::string_view name) {
  std::fprintf(stderr, "gemmops%.*s: unknown command '%.*s'\n\n", int(caller.size()), caller.data(),
               int(name.size()), name.data());
  print_usage(stderr);
  return kExitUsage;
}

// `help` alone prints the commands; `help run` prints run's options, as `run --help` does.
int help_command(Words args) {
  if (args.empty()) {
    print_usage(stdout);
    return kExitOk;
  }
  const Command* c = find_command(args[0]);
  if (c == nullptr) return unknown_command(" help", args[0]);
  if (c->run == help_command) return help_command({});
  static constexpr std::string_view kHelp[] = {"--help"};
  return c->run(Words(kHelp));
}

}  // namespace

int dispatch(Words words) {
  if (words.empty()) {
    print_usage(stderr);
    return kExitUsage;
  }
  if (words[0] == "--help" || words[0] == "-h") return help_command({});
  if (const Command* c = find_command(words[0])) return c->run(words.subspan(1));
  return unknown_command("", words[0]);
}

}  // namespace gemmops::cli
