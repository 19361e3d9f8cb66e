// tools/gemmops/table.cpp: two spaces between columns, no trailing blanks
// SPDX-License-Identifier: Apache-2.0
#include "table.hpp"

#include <algorithm>

namespace gemmops::cli {

std::string Table::to_string() const {
  std::vector<size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    if (row.size() > width.size()) width.resize(row.size(), 0);
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  };
  measure(header_);
  for (const auto& row : rows_) measure(row);

  std::string out;
  auto print = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    out += line + "\n";
  };
  print(header_);
  for (const auto& row : rows_) print(row);
  return out;
}

}  // namespace gemmops::cli
