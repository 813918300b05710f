#include "harness/host/launch/task_share.h"

#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace k3launch {

std::string shard_share(std::size_t index, std::size_t count) {
  return fmt::format("--shard {}/{}", index, count);
}

std::optional<Shard> shard_of(const std::string& share) {
  Shard s;
  if (std::sscanf(share.c_str(), "--shard %d/%d", &s.index, &s.count) != 2) return std::nullopt;
  return s;
}

std::string positions_share(ShareUnit unit, const std::vector<std::size_t>& positions) {
  return fmt::format("{} {}", unit == ShareUnit::kCells ? "--cells" : "--sessions",
                     fmt::join(positions, ","));
}

Args task_tail(bool resume) { return resume ? Args{"--resume"} : Args{}; }

}  // namespace k3launch
