#include "apps/scheduler/campaign_outcome.h"

#include <iostream>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/host/bench/child_output.h"
#include "tuner/tune_output.h"

namespace k3scheduler {
namespace {

// Every session of a campaign group: position, label, tuned (and where) or left.
nlohmann::json sessions_json(const k3tuner::CampaignGroup& g) {
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = 0; i < g.session_labels.size(); ++i) {
    const auto it = g.done_by.find(i);
    out.push_back({{"index", i},
                   {"label", g.session_labels[i]},
                   {"status", it == g.done_by.end() ? "left" : "tuned"},
                   {"board", it == g.done_by.end() ? "" : it->second}});
  }
  return out;
}

}  // namespace

nlohmann::json CampaignWork::to_json() const {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : out_.groups) {
    nlohmann::json jobs = nlohmann::json::array();
    for (const auto& j : g.outcome.jobs) jobs.push_back(k3tuner::job_json(j));
    groups.push_back({{"fingerprint", nlohmann::json::parse(g.fingerprint)},
                      {"boards", g.boards},
                      {"sessions_by_board", g.sessions_by},
                      {"lost", g.lost},
                      {"unfinished", g.unfinished},
                      {"jobs", jobs},
                      {"table", g.outcome.table_path},
                      {"objective", g.outcome.table.is_object()
                                        ? g.outcome.table["source"].value("objective", "")
                                        : std::string()},
                      {"table_problems", g.outcome.table_problems},
                      {"sessions", sessions_json(g)}});
  }
  nlohmann::json quarantined = nlohmann::json::object();
  for (const auto& [board, q] : out_.quarantined)
    quarantined[board] = {{"fault", q.first}, {"reason", q.second}};
  return {{"schema", k3bench::schema_id(k3bench::ChildOutput::kTuneFarm)},
          {"farm", farm_name_},
          {"groups", groups},
          {"not_used", out_.not_used},
          {"quarantined", quarantined},
          {"total_sessions", out_.groups.empty() ? 0 : out_.groups.front().session_labels.size()},
          {"wall_s", out_.wall_s}};
}

void CampaignWork::print_text() const {
  fmt::print("campaign on farm {}: {} fingerprint group(s); strategy {}, objective {}\n",
             farm_name_, out_.groups.size(), strategy_, objective_);
  for (const auto& [b, why] : out_.not_used) fmt::print("board {} not used: {}\n", b, why);
  for (const auto& g : out_.groups) {
    fmt::print("\nboards {}: {}\n", fmt::join(g.boards, ", "), g.outcome.facts.describe);
    if (!explain_) {
      std::string by;
      for (const auto& [b, n] : g.sessions_by)
        by += fmt::format("{}{} {}", by.empty() ? "" : ", ", b, n);
      fmt::print("sessions by board: {}\n", by.empty() ? "none" : by);
    }
    for (const auto& [b, why] : g.lost) fmt::print("board {} lost: {}\n", b, why);
    for (const auto& u : g.unfinished) fmt::print("UNFINISHED {}\n", u);
    // Ops without a space: one line for all of them, not one per shape.
    std::map<std::string, int> skipped;
    int sessions = 0;
    std::size_t valid = 0;
    for (const auto& j : g.outcome.jobs) {
      if (!j.note.empty()) {
        ++skipped[j.op];
        continue;
      }
      ++sessions;
      valid += j.result.counts.valid;
      k3tuner::print_job(j, explain_);
    }
    if (explain_) fmt::print("{} sessions, {} valid configurations in all\n", sessions, valid);
    if (!skipped.empty()) {
      std::string ops;
      for (const auto& [op, n] : skipped)
        ops += fmt::format("{}{} ({})", ops.empty() ? "" : ", ", op, n);
      fmt::print("no search space, not tuned: {}\n", ops);
    }
    if (!g.outcome.table_path.empty())
      fmt::print("table {} ({} entries)\n", g.outcome.table_path,
                 g.outcome.table["entries"].size());
  }
  fmt::print("wall {:.1f} s\n", out_.wall_s);
}

std::vector<std::string> CampaignWork::problems() const {
  std::vector<std::string> lines;
  for (const auto& g : out_.groups)
    for (const auto& p : g.outcome.table_problems)
      lines.push_back("table invalid (not written): " + p);
  return lines;
}

WorkStatus CampaignWork::status() const {
  for (const auto& g : out_.groups)
    if (!g.outcome.table_problems.empty()) return WorkStatus::kProblems;
  return !out_.complete() && !explain_ ? WorkStatus::kCellsFailed : WorkStatus::kOk;
}

}  // namespace k3scheduler
