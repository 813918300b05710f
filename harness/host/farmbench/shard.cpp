#include "harness/host/farmbench/shard.h"

#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/host/bench/user_error.h"

namespace k3farmbench {

std::string Shard::text() const {
  if (!positions.empty()) return fmt::format("cells {}", fmt::join(positions, ","));
  return fmt::format("{}/{}", index, count);
}

std::vector<std::size_t> parse_cell_positions(const std::string& text) {
  static const std::regex form(R"([0-9]{1,9}(,[0-9]{1,9})*)");
  if (!std::regex_match(text, form))
    throw k3bench::UserError(
        fmt::format("--cells: '{}' is not a list of cell positions (e.g. 0,3,5)", text));
  std::vector<std::size_t> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoul(item));
  return out;
}

Shard parse_shard(const std::string& text) {
  static const std::regex form(R"(([0-9]{1,5})/([0-9]{1,5}))");
  std::smatch m;
  if (!std::regex_match(text, m, form))
    throw k3bench::UserError(fmt::format("--shard: '{}' is not of the form i/n (e.g. 2/4)", text));
  Shard s{std::stoi(m[1]), std::stoi(m[2]), {}};
  if (s.count < 1 || s.count > 10000 || s.index < 1 || s.index > s.count)
    throw k3bench::UserError(fmt::format("--shard: '{}': need 1 <= i <= n <= 10000", text));
  return s;
}

std::vector<std::size_t> shard_positions(std::size_t cells, const Shard& shard) {
  std::vector<std::size_t> out;
  if (!shard.positions.empty()) {
    for (const auto p : shard.positions)
      if (p < cells) out.push_back(p);
    return out;
  }
  for (std::size_t i = 0; i < cells; ++i)
    if (i % static_cast<std::size_t>(shard.count) == static_cast<std::size_t>(shard.index - 1))
      out.push_back(i);
  return out;
}

}  // namespace k3farmbench
