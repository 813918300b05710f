#include "harness/host/farmbench/shard.h"

#include <regex>

#include <fmt/format.h>

#include "harness/host/bench/user_error.h"

namespace k3farmbench {

std::string Shard::text() const {
  return fmt::format("{}/{}", index, count);
}

Shard parse_shard(const std::string& text) {
  static const std::regex form(R"(([0-9]{1,5})/([0-9]{1,5}))");
  std::smatch m;
  if (!std::regex_match(text, m, form))
    throw k3bench::UserError(fmt::format("--shard: '{}' is not of the form i/n (e.g. 2/4)", text));
  Shard s{std::stoi(m[1]), std::stoi(m[2])};
  if (s.count < 1 || s.count > 10000 || s.index < 1 || s.index > s.count)
    throw k3bench::UserError(fmt::format("--shard: '{}': need 1 <= i <= n <= 10000", text));
  return s;
}

std::vector<std::size_t> shard_positions(std::size_t cells, const Shard& shard) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < cells; ++i)
    if (i % static_cast<std::size_t>(shard.count) == static_cast<std::size_t>(shard.index - 1))
      out.push_back(i);
  return out;
}

}  // namespace k3farmbench
