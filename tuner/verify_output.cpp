#include "tuner/verify_output.h"

#include <fmt/format.h>

namespace k3tuner {

nlohmann::json verify_json(const VerifyOutcome& out, const std::string& table,
                           const std::string& design) {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& e : out.entries)
    entries.push_back({{"id", e.id},
                       {"verdict", e.verdict_text()},
                       {"shape", e.shape},
                       {"params", e.params},
                       {"claimed_speedup", e.claimed},
                       {"evidence", e.evidence.to_json()},
                       {"min_effect", e.threshold},
                       {"mde", e.mde},
                       {"mde_target", e.mde_target},
                       {"stop_reason", e.stop_reason}});
  return {{"table", table},
          {"target", out.facts.describe},
          {"run", out.run_uuid},
          {"entries", entries},
          {"faster", out.faster},
          {"slower", out.slower},
          {"no_difference", out.same},
          {"failed", out.failed},
          {"geomean_speedup", out.geomean_speedup},
          {"verdict", out.verdict},
          {"design", design},
          {"rules", out.rules}};
}

void print_verify(const VerifyOutcome& out, const std::string& design) {
  fmt::print("target {}; run {}; {}\n", out.facts.describe, out.run_uuid,
             design == "within" ? "both sides alternating inside every process"
                                : "one process per side and round");
  fmt::print("{:<44} {:>12} {:>12} {:>9} {:>17} {:>8}  {}\n", "entry", "table ns", "defaults ns",
             "speed-up", "95% CI", "claimed", "verdict");
  for (const auto& e : out.entries) {
    if (e.verdict == EntryVerdict::kFailed) {
      fmt::print("{:<44} {}\n", e.id, e.verdict_text());
      continue;
    }
    const std::string verdict =
        e.verdict == EntryVerdict::kNoDifference
            ? fmt::format("no difference (within +-{:.1f}%)", 100 * e.mde)
            : fmt::format("{} (at least {:.1f}%)", e.verdict_text(), 100 * e.threshold);
    fmt::print("{:<44} {:>12.4g} {:>12.4g} {:>8.3f}x {:>8.3f}..{:<7.3f} {:>7.3f}x  {}; {} {}: {}\n",
               e.id, e.evidence.mean, e.evidence.default_mean, e.evidence.speedup,
               e.evidence.speedup_low, e.evidence.speedup_high, e.claimed, verdict,
               e.evidence.processes, design == "within" ? "processes" : "rounds", e.stop_reason);
  }
  fmt::print("{} (rules: {})\n", out.verdict, out.rules);
}

}  // namespace k3tuner
