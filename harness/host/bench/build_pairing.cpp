#include "harness/host/bench/build_pairing.h"

#include <filesystem>

#include <fmt/format.h>

#include "harness/host/bench/user_error.h"
#include "harness/host/targets/runner_facts.h"

namespace k3bench {
namespace fs = std::filesystem;
namespace {

BuildPairing rounds(std::string why) {
  return {"", std::move(why)};
}

// The fields that make two reports the same build: the runner and how it was compiled.
std::string build_difference(const nlohmann::json& plugin, const nlohmann::json& runner) {
  for (const char* key : {"name", "version", "source_revision"}) {
    const auto a = plugin["runner"].value(key, ""), b = runner["runner"].value(key, "");
    if (a != b) return fmt::format("its {} is {}, the runner's {}", key, a, b);
  }
  for (const char* key : {"compiler", "build_type", "flags", "target_arch"}) {
    const auto a = plugin["build"].value(key, ""), b = runner["build"].value(key, "");
    if (a != b) return fmt::format("its {} is '{}', the runner's '{}'", key, a, b);
  }
  return {};
}

}  // namespace

BuildPairingMode parse_build_pairing_mode(const std::string& text) {
  if (text == "auto") return BuildPairingMode::kAuto;
  if (text == "rounds") return BuildPairingMode::kRounds;
  throw UserError(fmt::format("--build-pairing: '{}' is not auto or rounds", text));
}

std::string plugin_beside(const std::string& runner_path) {
  std::error_code ec;
  const std::string kept = runner_path + kKeptPluginSuffix;
  if (fs::is_regular_file(kept, ec)) return kept;
  const fs::path tree = fs::path(runner_path).parent_path() / kPluginFile;
  if (fs::is_regular_file(tree, ec)) return tree.string();
  return {};
}

BuildPairing decide_build_pairing(const k3targets::Target& candidate,
                                  const k3targets::Target& baseline,
                                  const k3targets::RunnerFacts& baseline_facts,
                                  const std::vector<CellSpec>& cells, BuildPairingMode mode) {
  if (mode == BuildPairingMode::kRounds) return rounds("--build-pairing rounds");
  for (const CellSpec& c : cells) {
    const MeasureSettings& s = c.settings;
    if (s.alternate_extra_work || !s.params_b.is_null() || !s.build_b.empty())
      return rounds(fmt::format("{} already alternates two sides in its process", c.label()));
    if (!s.table.empty())
      return rounds(
          fmt::format("{} loads a tuning table, which the plugin is not given", c.label()));
  }
  const std::string runner = baseline.runner_path();
  const std::string plugin = plugin_beside(runner);
  if (plugin.empty())
    return rounds(fmt::format(
        "no {} beside the baseline runner {} (a statically linked build, or one from before the "
        "plugin)",
        kPluginFile, runner));
  // Where the runner under test runs: in place here, installed by its hash on a farm board (an
  // install that fails loses the board: TargetLost goes up as from any of its runs).
  const std::string placed = candidate.place_file(plugin);
  if (placed.empty())
    return rounds(fmt::format("{} runs its runner over plain ssh, which cannot be handed {}",
                              candidate.name(), plugin));
  const double timeout = candidate.config().timeout_s;
  const auto probe = candidate.run({"--facts", "--json", "--build-b", placed},
                                   k3targets::ProcessOptions::with_timeout(timeout));
  if (!probe.ok())
    return rounds(fmt::format("the runner under test does not load {}: {}", plugin,
                              probe.failure_reason(timeout)));
  nlohmann::json loaded, own;
  try {
    loaded = nlohmann::json::parse(probe.out).at("build_b");
    own = baseline_facts.document.at("environment");
  } catch (const std::exception& e) {
    return rounds(fmt::format("the plugin's build could not be read: {}", e.what()));
  }
  const nlohmann::json& build = loaded["build"];
  if (build["build"].value("planted_slowdown_percent", 0.0) != 0.0)
    return rounds(fmt::format("{} carries a planted slowdown (a build for the selfcheck)", plugin));
  if (const std::string diff = build_difference(build, own); !diff.empty())
    return rounds(fmt::format("{} is not the baseline runner's build: {}", plugin, diff));
  return {placed, fmt::format("the runner under test loads {} (plugin interface {}, source {})",
                              plugin, loaded.value("interface_version", 0),
                              build["runner"].value("source_revision", "?"))};
}

}  // namespace k3bench
