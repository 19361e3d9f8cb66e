// tools/gemmops/main.cpp: the gemmops CLI: a table of subcommands
// SPDX-License-Identifier: Apache-2.0
#include <cstdio>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "gemmops/version.hpp"

namespace {

using gemmops::cli::Words;

int help_command(Words);

struct Command {
  std::string_view name;
  std::string_view summary;
  int (*run)(Words);
};

constexpr Command kCommands[] = {
    {"run", "run one problem (default: the seed problem), check it, print time and TFLOP/s",
     gemmops::cli::run_command},
    {"list", "list the operators that support a problem, then the others with their reasons",
     gemmops::cli::list_command},
    {"help", "print this help", help_command},
};

void print_usage(std::FILE* to) {
  std::fprintf(to, "gemmops %s: grouped and dense GEMM operators\n\nusage: gemmops <command> [options]\n\n",
               gemmops::kVersion);
  for (const Command& c : kCommands) std::fprintf(to, "  %-6.*s %.*s\n", int(c.name.size()), c.name.data(),
                                                  int(c.summary.size()), c.summary.data());
  std::fprintf(to, "\n'gemmops <command> --help' lists the options of a command.\n");
}

int help_command(Words) {
  print_usage(stdout);
  return gemmops::cli::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> words(argv + 1, argv + argc);
  if (words.empty()) {
    print_usage(stderr);
    return gemmops::cli::kExitUsage;
  }
  if (words[0] == "--help" || words[0] == "-h") return help_command({});
  for (const Command& c : kCommands)
    if (c.name == words[0]) return c.run(Words(words).subspan(1));
  std::fprintf(stderr, "gemmops: unknown command '%.*s'\n\n", int(words[0].size()), words[0].data());
  print_usage(stderr);
  return gemmops::cli::kExitUsage;
}
