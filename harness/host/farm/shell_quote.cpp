#include "harness/host/farm/shell_quote.h"

namespace k3farm {

std::string shell_quote(std::string_view word) {
  std::string out;
  out.reserve(word.size() + 2);
  out.push_back('\'');
  for (const char c : word) {
    if (c == '\'')
      out += "'\\''";  // close, an escaped quote, reopen
    else
      out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& word : argv) {
    if (!out.empty()) out.push_back(' ');
    out += shell_quote(word);
  }
  return out;
}

}  // namespace k3farm
