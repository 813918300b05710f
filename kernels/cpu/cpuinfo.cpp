// /proc/cpuinfo parsing for the CPU gates (pure text processing, testable on fixture text).
#include <charconv>

#include "k3k/cpu.h"

namespace k3k {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// "key<tabs/spaces>: value" -> (key, value); false for lines without a colon.
bool split_line(std::string_view line, std::string_view& key, std::string_view& value) {
  const auto colon = line.find(':');
  if (colon == std::string_view::npos) return false;
  key = trim(line.substr(0, colon));
  value = trim(line.substr(colon + 1));
  return true;
}

template <typename T>
std::optional<T> parse_number(std::string_view v, int base) {
  T x{};
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x, base);
  if (ec != std::errc() || end != v.data() + v.size() || v.empty()) return std::nullopt;
  return x;
}

std::optional<std::uint64_t> parse_marchid_value(std::string_view v) {
  if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X'))
    return parse_number<std::uint64_t>(v.substr(2), 16);
  return parse_number<std::uint64_t>(v, 10);
}

}  // namespace

std::optional<std::uint64_t> parse_cpuinfo_marchid(std::string_view cpuinfo, int cpu) {
  std::optional<long> current;  // processor number of the block being read
  while (!cpuinfo.empty()) {
    const auto eol = cpuinfo.find('\n');
    const std::string_view line = cpuinfo.substr(0, eol);
    cpuinfo.remove_prefix(eol == std::string_view::npos ? cpuinfo.size() : eol + 1);
    std::string_view key, value;
    if (!split_line(line, key, value)) continue;
    if (key == "processor") {
      current = parse_number<long>(value, 10);
    } else if (key == "marchid" && (cpu < 0 || (current && *current == cpu))) {
      return parse_marchid_value(value);
    }
  }
  return std::nullopt;
}

}  // namespace k3k
