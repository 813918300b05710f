#include "harness/host/store/build_pairing_record.h"

#include <fmt/format.h>

namespace k3store {

namespace {
constexpr const char* kWithin = "within-process";
constexpr const char* kRounds = "rounds";
constexpr const char* kUnknownPlugin = "?";  // a stored within pairing that lost its path
}  // namespace

nlohmann::json BuildPairing::to_json() const {
  return {{"design", within() ? kWithin : kRounds}, {"plugin", plugin}, {"why", why}};
}

std::optional<BuildPairing> BuildPairing::from_settings(const nlohmann::json& settings) {
  if (!settings.is_object() || !settings.contains("build_pairing")) return std::nullopt;
  const nlohmann::json& p = settings["build_pairing"];
  if (!p.is_object() || p.empty()) return std::nullopt;
  BuildPairing b{p.value("plugin", ""), p.value("why", "")};
  if (p.value("design", "") == kWithin && b.plugin.empty()) b.plugin = kUnknownPlugin;
  if (p.value("design", "") != kWithin) b.plugin.clear();
  return b;
}

std::string BuildPairing::text() const {
  if (within()) return fmt::format("both builds paired within one process (k3bench --build-b): {}", why);
  return why.empty() ? std::string("the builds in separate processes, interleaved rounds")
                     : fmt::format("the builds in separate processes, interleaved rounds: {}", why);
}

}  // namespace k3store
