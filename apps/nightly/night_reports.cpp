#include "apps/nightly/night_reports.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "harness/common/sys/text_file.h"
#include "reports/html.h"
#include "reports/markdown_html.h"

namespace k3nightly {
namespace {

namespace fs = std::filesystem;
using k3sys::read_text;

// The outcome of one verdict step (a board's judge, a path's count verdict) as report.json says it.
nlohmann::json step_outcome(const StepLine& l) {
  return {{"status", l.status},
          {"verdict", l.status != "done" ? "not judged"
                      : l.exit_code == 4 ? "regression"
                      : l.exit_code == 3 ? "cells failed"
                                         : "ok"},
          {"note", l.note}};
}

nlohmann::json night_json(const NightlyOutcome& o, const NightlyRequest& rq,
                          const std::vector<StepLine>& lines, const NightlyState& state) {
  nlohmann::json night = {{"id", o.id},           {"profile", rq.profile},    {"farm", rq.farm},
                          {"verdict", o.verdict}, {"exit_code", o.exit_code}, {"wall_s", o.wall_s}};
  night["steps"] = nlohmann::json::array();
  for (const auto& l : lines)
    night["steps"].push_back({{"step", l.name},
                              {"status", l.status},
                              {"exit_code", l.exit_code},
                              {"wall_s", l.wall_s},
                              {"note", l.note}});
  for (const auto& l : lines) {
    const auto judged = [&](const std::string& prefix) {
      return l.name.rfind(prefix, 0) == 0 ? l.name.substr(prefix.size()) : std::string();
    };
    if (const auto board = judged("board-judge-"); !board.empty())
      night["boards"][board] = step_outcome(l);
    if (const auto path = judged("count-verdict-"); !path.empty()) {
      night["instruction_counts"][path] = step_outcome(l);
      night["instruction_counts"][path]["against"] = state.previous_counts_nightly;
    }
  }
  night["tables"] = nlohmann::json::array();
  if (fs::exists(o.dir + "/tables"))
    for (const auto& f : fs::directory_iterator(o.dir + "/tables"))
      if (f.path().extension() == ".json") night["tables"].push_back(f.path().string());
  return night;
}

}  // namespace

void write_night_reports(const NightlyOutcome& o, const NightlyRequest& rq,
                         const std::vector<StepLine>& lines, const NightlyState& state,
                         bool failed) {
  const std::string text = night_summary(o, rq, lines, state);
  std::ofstream(o.dir + "/nightly.md") << text;
  if (failed) return;
  // The report's summary.md gets the nightly's steps appended once (the verdict stays first).
  const std::string summary = o.dir + "/summary.md";
  if (fs::exists(summary) && read_text(summary).find("\n# Nightly ") == std::string::npos)
    std::ofstream(summary, std::ios::app) << "\n" << text;
  // report.html leads with the night (verdict, boards, counts, tables, steps), rendered, once.
  const std::string report_html = o.dir + "/report.html";
  if (fs::exists(report_html)) {
    std::string page = read_text(report_html);
    if (k3reports::lead_with_night(page, "k3tune nightly " + o.id,
                                   k3reports::markdown_to_html(text)))
      std::ofstream(report_html) << page;
  }
  const std::string report_json = o.dir + "/report.json";
  if (fs::exists(report_json)) {
    nlohmann::json report = nlohmann::json::parse(read_text(report_json), nullptr, false);
    if (report.is_object()) {
      report["nightly"] = night_json(o, rq, lines, state);
      std::ofstream(report_json) << report.dump(2) << "\n";
    }
  }
}

}  // namespace k3nightly
