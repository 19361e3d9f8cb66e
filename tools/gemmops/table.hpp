// tools/gemmops/table.hpp: a plain text table with aligned columns
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <vector>

namespace gemmops::cli {

/// Rows of cells under a header; to_string() pads every column but the last to its widest cell.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add_row(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  bool empty() const { return rows_.empty(); }
  std::string to_string() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace gemmops::cli
