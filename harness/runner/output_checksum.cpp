#include "harness/runner/output_checksum.h"

#include <algorithm>

#include <fmt/format.h>

namespace k3runner {

std::uint64_t fnv1a64(const void* data, std::size_t bytes, std::uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

nlohmann::json output_checksum(const OpCase& c) {
  const std::vector<std::string> names = c.output_names();
  const std::vector<DumpArray> arrays = c.dump_arrays();
  std::uint64_t h = 0xcbf29ce484222325ull;
  std::int64_t bytes = 0;
  nlohmann::json hashed = nlohmann::json::array();
  for (const auto& name : names) {
    const auto it = std::find_if(arrays.begin(), arrays.end(),
                                 [&](const DumpArray& a) { return a.name == name; });
    if (it == arrays.end()) continue;
    h = fnv1a64(it->data, static_cast<std::size_t>(it->bytes), h);
    bytes += it->bytes;
    hashed.push_back(name);
  }
  if (hashed.empty()) return nullptr;
  return {{"fnv1a64", fmt::format("{:016x}", h)}, {"arrays", hashed}, {"bytes", bytes}};
}

}  // namespace k3runner
