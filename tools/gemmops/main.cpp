// tools/gemmops/main.cpp: the gemmops CLI's entry point (the commands are in dispatch.cpp)
// SPDX-License-Identifier: Apache-2.0
#include <string_view>
#include <vector>

#include "commands.hpp"

int main(int argc, char** argv) {
  const std::vector<std::string_view> words(argv + 1, argv + argc);
  return gemmops::cli::dispatch(words);
}
