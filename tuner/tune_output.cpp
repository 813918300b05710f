#include "tuner/tune_output.h"

#include <cstdint>

#include <fmt/format.h>

#include "harness/common/params/param_spec.h"
#include "harness/host/bench/catalog.h"

namespace k3tuner {

nlohmann::json job_json(const TuneJobOutcome& j) {
  nlohmann::json o = {{"op", j.op},           {"shape", j.shape},      {"role", j.role},
                      {"session", j.session}, {"space", j.space_file}, {"resumed", j.resumed}};
  if (!j.note.empty()) o["note"] = j.note;
  o["excluded_emulated"] = j.excluded_emulated;
  o["result"] = j.result.to_json();
  o["measurements_new"] = j.result.new_measurements;
  if (!j.seed.entry_id.empty() || !j.seed.searched.empty()) o["seed"] = j.seed.to_json();
  o["cache_hits"] = j.result.cache_hits;
  o["disturbed"] = j.result.disturbed;
  o["unavailable"] = j.result.unavailable;
  return o;
}

void print_heldout(const nlohmann::json& g) {
  fmt::print("held out, {} on {} ({} shapes): loss over each shape's best, %\n",
             g["op"].get<std::string>(), g["path"].get<std::string>(), g["shapes"].size());
  fmt::print("  {:<36} {:>8} {:>8} {:>8}\n", "shape", "rule", "nearest", "defaults");
  auto pct = [](const nlohmann::json& v) { return 100 * v.get<double>(); };
  for (const auto& s : g["shapes"])
    fmt::print("  {:<36} {:>8.2f} {:>8.2f} {:>8.2f}\n", s["shape"].get<std::string>(),
               pct(s["rule"]), pct(s["nearest"]), pct(s["defaults"]));
  for (const char* row : {"mean", "worst"})
    fmt::print("  {:<36} {:>8.2f} {:>8.2f} {:>8.2f}\n", row, pct(g[row]["rule"]),
               pct(g[row]["nearest"]), pct(g[row]["defaults"]));
}

void print_job(const TuneJobOutcome& j, bool explain) {
  const std::string label = fmt::format("{} {}{}", j.op, k3params::to_kv(j.shape),
                                        j.role.empty() ? "" : " (" + j.role + ")");
  if (!j.note.empty()) {
    fmt::print("{}: skipped: {}\n", label, j.note);
    return;
  }
  const auto& c = j.result.counts;
  if (!c.enumerated) {
    fmt::print(
        "{}\n  space {}: {} combinations, more than the {} a search enumerates (distinct and valid "
        "not "
        "counted; narrow a knob)\n",
        label, j.space_file, c.product, kMaxEnumerated);
    return;
  }
  fmt::print(
      "{}\n  space {}: {} combinations, {} distinct (inactive knobs at their defaults), {} valid "
      "after the "
      "constraints{}{}\n",
      label, j.space_file, c.product, c.distinct, c.valid,
      c.excluded_by_flags
          ? fmt::format(", {} left out for a missing flag (e.g. --allow-hp)", c.excluded_by_flags)
          : "",
      j.excluded_emulated.empty()
          ? ""
          : fmt::format(", {} left out as emulated here (--force times them)",
                        j.excluded_emulated.size()));
  if (explain) return;
  const auto& r = j.result;
  const std::string cached =
      r.cache_hits > 0 ? fmt::format(", {} of them from the measurement cache", r.cache_hits) : "";
  const std::string missing =
      r.unavailable > 0 ? fmt::format(", {} asked for but never measured", r.unavailable) : "";
  const std::string voided =
      r.disturbed > 0 ? fmt::format(", {} disturbed and measured again", r.disturbed) : "";
  fmt::print("  {} measurements ({} new{}{}{}{}){}; {}\n", r.measurements, r.new_measurements,
             voided, cached, missing, j.resumed ? ", session resumed" : "",
             r.budget_exhausted ? ", BUDGET EXHAUSTED" : "", r.summary);
  if (r.chosen == SIZE_MAX) {
    fmt::print("  no configuration could be chosen (all rejected)\n");
    return;
  }
  const auto& e = r.evidence;
  const std::string interval =
      e.exact ? "exact"
      : e.conclusive()
          ? fmt::format("95% CI {:.3f}..{:.3f}{}", e.speedup_low, e.speedup_high,
                        e.paired ? fmt::format(", {} paired rounds", e.paired_rounds) : "")
          : fmt::format("{} paired rounds with the defaults: too few for an interval",
                        e.paired_rounds);
  fmt::print(
      "  chosen {}: {:.4g} (95% CI {:.4g}..{:.4g}, {} measurements); defaults {:.4g}; speed-up "
      "{:.3f}x ({})\n",
      k3params::to_kv(r.candidates[r.chosen].config), e.mean, e.ci_low, e.ci_high, e.processes,
      e.default_mean, e.speedup, interval);
  int rejected = 0;
  for (const auto& cand : r.candidates)
    if (cand.rejected) {
      if (rejected++ < 3) fmt::print("  rejected {}: {}\n", cand.key, cand.reason);
    }
  if (rejected > 3) fmt::print("  ... {} rejected in all\n", rejected);
}

nlohmann::json tune_json(const TuneOutcome& out) {
  nlohmann::json jobs = nlohmann::json::array();
  for (const auto& j : out.jobs) jobs.push_back(job_json(j));
  nlohmann::json heldout = nlohmann::json::array(), suggestions = nlohmann::json::array();
  for (const auto& g : out.heldout) heldout.push_back(g.to_json());
  for (const auto& g : out.suggestions) suggestions.push_back(g.to_json());
  return {{"target", out.facts.describe}, {"jobs", jobs},
          {"heldout", heldout},           {"suggestions", suggestions},
          {"table", out.table_path},      {"table_problems", out.table_problems}};
}

void print_tune(const TuneOutcome& out, const TuneCommand& c) {
  fmt::print("target {}; strategy {}, objective {}{}\n", out.facts.describe, c.strategy,
             c.objective,
             c.replay ? " (replay of stored measurements: nothing run, nothing written)" : "");
  for (const auto& j : out.jobs) print_job(j, c.explain);
  for (const auto& g : out.heldout) print_heldout(g.to_json());
  for (const auto& g : out.suggestions) {
    fmt::print("measure next, {} on {} (predicted loss there, nearest measured shape):\n", g.op,
               g.path);
    for (const auto& s : g.shapes)
      fmt::print("  --shape {:<28} {:>6.2f}%  {} ({}; {:.2f} log2 away)\n", s.shape.label,
                 100 * s.predicted_loss, s.shape.origin, s.nearest, s.distance);
  }
  if (!out.table_path.empty())
    fmt::print("table {} ({} entries)\n", out.table_path, out.table["entries"].size());
}

}  // namespace k3tuner
