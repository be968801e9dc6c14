// A plain-text table with a header row and aligned columns, for the terminal listings (sweep,
// compare, inventory). Numbers are right-aligned, words left-aligned; the caller formats cells.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace moesim {

enum class Align { left, right };

struct TextColumn {
  std::string header;
  Align align = Align::left;
};

class TextTable {
 public:
  explicit TextTable(std::vector<TextColumn> columns) : columns_(std::move(columns)) {}

  // A row with one cell per column (missing cells print empty).
  void add(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  bool empty() const { return rows_.empty(); }

  std::string render() const {
    std::vector<std::size_t> width(columns_.size());
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      width[c] = columns_[c].header.size();
      for (const auto& r : rows_) width[c] = std::max(width[c], c < r.size() ? r[c].size() : 0);
    }
    std::string out;
    const auto line = [&](const auto& cell_of) {
      std::string text;
      for (std::size_t c = 0; c < columns_.size(); ++c) {
        const std::string cell = cell_of(c);
        const std::string pad(width[c] - cell.size(), ' ');
        text += (c == 0 ? "" : "  ") + (columns_[c].align == Align::right ? pad + cell : cell + pad);
      }
      text.erase(text.find_last_not_of(' ') + 1);
      out += text + "\n";
    };
    line([&](std::size_t c) { return columns_[c].header; });
    for (const auto& r : rows_) line([&](std::size_t c) { return c < r.size() ? r[c] : std::string(); });
    return out;
  }

 private:
  std::vector<TextColumn> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace moesim
