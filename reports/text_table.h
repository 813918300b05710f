// Plain-text layout for terminals and CI logs: Markdown tables padded to aligned columns (readable
// raw and rendered), shrunk to a width limit by truncating the one flexible column, and prose
// wrapped at the same limit. ASCII only, so widths are byte counts.
#pragma once

#include <string>
#include <vector>

namespace k3reports {

constexpr std::size_t kTextWidth = 100;

class TextTable {
 public:
  enum class Align { kLeft, kRight };
  // `flex`: the column that is shortened when the table is wider than the limit, by cutting out
  // its middle ("..."): a cell label starts with the op and ends with the parameters that tell
  // its rows apart, so both ends are kept.
  TextTable(std::vector<std::string> headers, std::vector<Align> align, std::size_t flex = 0);
  void add(std::vector<std::string> row);
  bool empty() const { return rows_.empty(); }
  std::string markdown(std::size_t width = kTextWidth) const;

 private:
  std::vector<std::string> headers_;
  std::vector<Align> align_;
  std::size_t flex_;
  std::vector<std::vector<std::string>> rows_;
};

// Words of `text` wrapped at `width`; continuation lines start with `indent`.
std::string wrap(const std::string& text, std::size_t width = kTextWidth,
                 const std::string& first_prefix = "", const std::string& indent = "");
// "text" cut to `width` bytes with "..." at the end when longer.
std::string clip(const std::string& text, std::size_t width);
// "text" cut to `width` bytes by replacing its middle with "..." when longer.
std::string clip_middle(const std::string& text, std::size_t width);

}  // namespace k3reports
