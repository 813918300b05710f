#include "reports/text_table.h"

#include <algorithm>
#include <sstream>

namespace k3reports {

TextTable::TextTable(std::vector<std::string> headers, std::vector<Align> align, std::size_t flex)
    : headers_(std::move(headers)), align_(std::move(align)), flex_(flex) {
  align_.resize(headers_.size(), Align::kLeft);
}

void TextTable::add(std::vector<std::string> row) {
  row.resize(headers_.size());
  for (auto& cell : row) std::replace(cell.begin(), cell.end(), '|', '/');  // Markdown separators
  rows_.push_back(std::move(row));
}

std::string clip(const std::string& text, std::size_t width) {
  if (text.size() <= width) return text;
  if (width <= 3) return text.substr(0, width);
  return text.substr(0, width - 3) + "...";
}

std::string clip_middle(const std::string& text, std::size_t width) {
  if (text.size() <= width) return text;
  if (width <= 3) return text.substr(0, width);
  const std::size_t head = (width - 3) / 2, tail = width - 3 - head;
  return text.substr(0, head) + "..." + text.substr(text.size() - tail);
}

std::string TextTable::markdown(std::size_t width) const {
  const std::size_t n = headers_.size();
  std::vector<std::size_t> w(n, 3);
  for (std::size_t c = 0; c < n; ++c) {
    w[c] = std::max(w[c], headers_[c].size());
    for (const auto& r : rows_) w[c] = std::max(w[c], r[c].size());
  }
  std::size_t total = 1;
  for (std::size_t c = 0; c < n; ++c) total += w[c] + 3;
  if (total > width && flex_ < n) {
    const std::size_t excess = total - width;
    w[flex_] = std::max<std::size_t>(std::max<std::size_t>(headers_[flex_].size(), 8),
                                     w[flex_] > excess ? w[flex_] - excess : 0);
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out = "|";
    for (std::size_t c = 0; c < n; ++c) {
      const std::string v = c == flex_ ? clip_middle(cells[c], w[c]) : clip(cells[c], w[c]);
      const std::string pad(w[c] - v.size(), ' ');
      out += ' ';
      if (align_[c] == Align::kRight)
        out.append(pad).append(v);
      else
        out.append(v).append(pad);
      out += " |";
    }
    return out + "\n";
  };
  std::string out = line(headers_);
  out += "|";
  for (std::size_t c = 0; c < n; ++c)
    out += align_[c] == Align::kRight ? std::string(w[c] + 1, '-') + ":|"
                                      : std::string(w[c] + 2, '-') + "|";
  out += "\n";
  for (const auto& r : rows_) out += line(r);
  return out;
}

std::string wrap(const std::string& text, std::size_t width, const std::string& first_prefix,
                 const std::string& indent) {
  std::istringstream in(text);
  std::string word, out, line = first_prefix;
  bool line_has_word = false;
  while (in >> word) {
    if (line_has_word && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line = indent;
      line_has_word = false;
    }
    if (line_has_word) line += " ";
    line += clip(word, width - std::min(width - 4, line.size()));
    line_has_word = true;
  }
  if (line_has_word || !first_prefix.empty()) out += line + "\n";
  return out;
}

}  // namespace k3reports
