// How a run measured its two builds, as the run's settings store it ("build_pairing"): both builds
// inside each runner process (k3bench --build-b, the candidate's runner loading the baseline's
// kernel plugin) or the two runners in separate processes of the same interleaved rounds, and why.
// The one wording of that fact: the A/B's header (bench, model), the verdict (compare) and the
// nightly's verdict line all print text().
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace k3store {

struct BuildPairing {
  std::string plugin;  // the baseline's plugin the candidate's runner loads; "": rounds
  std::string why;     // within: what was checked; rounds: why the builds are not in one process
  bool within() const { return !plugin.empty(); }
  // {"design": "within-process" | "rounds", "plugin", "why"}.
  nlohmann::json to_json() const;
  // The pairing a run's settings hold; nullopt for a run without two builds (or from before it
  // was stored). A stored within-process pairing without its plugin path keeps its design.
  static std::optional<BuildPairing> from_settings(const nlohmann::json& settings);
  // "both builds paired within one process (k3bench --build-b): why" or "the builds in separate
  // processes, interleaved rounds: why".
  std::string text() const;
};

}  // namespace k3store
