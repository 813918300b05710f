#include "reports/report.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "reports/boards.h"
#include "harness/host/store/database.h"
#include "harness/host/store/probes.h"
#include "reports/report_error.h"
#include "harness/host/store/results.h"
#include "reports/runner_store.h"

namespace k3reports {
namespace fs = std::filesystem;
namespace {

std::unique_ptr<k3store::Connection> open_read_only(const std::string& path) {
  try {
    return k3store::open_database(path, k3store::OpenMode::kReadOnly);
  } catch (const k3store::StoreError& e) {
    throw ReportError(e.what());
  }
}

std::optional<k3store::NoiseFloorRecord> noise_floor(k3store::Connection& db, const k3verdict::RunData& run,
                                                     const k3verdict::RegressionConfig& config) {
  if (!config.use_noise_floor) return std::nullopt;
  return k3store::latest_noise_floor(db, run.target, run.cpu_model);
}

}  // namespace

int Report::exit_code() const {
  if (verdict && verdict->regressions() > 0) return kReportRegressions;
  for (const auto& c : run.cells)
    if (c.build_hash == run.build_hash && !c.ok) return kReportCellsFailed;
  return kReportClean;
}

std::vector<std::string> keep_run_runners(const k3verdict::RunData& run, const std::string& runners_dir) {
  std::vector<std::string> notes;
  for (const auto& b : run.builds) {
    const auto kept = keep_runner(runners_dir, b.build_hash, b.binary_path);
    notes.push_back(fmt::format("runner {}: {}{}", b.build_hash.substr(0, 12), kept.note,
                                kept.path.empty() ? "" : " (" + kept.path + ")"));
  }
  return notes;
}

std::unique_ptr<JudgedRun> judge_within_run(const std::string& db_path, const std::string& run_uuid,
                                            const std::string& rules_file) {
  const k3verdict::RegressionConfig config = k3verdict::load_regression_config(rules_file);
  auto db = open_read_only(db_path);
  auto judged = std::make_unique<JudgedRun>();
  judged->run = k3verdict::load_run(*db, run_uuid);
  judged->verdict = k3verdict::compare_within_run(judged->run, config, noise_floor(*db, judged->run, config));
  return judged;
}

std::unique_ptr<JudgedRun> judge_table_within_run(const std::string& db_path,
                                                  const std::string& run_uuid,
                                                  const std::string& rules_file) {
  const k3verdict::RegressionConfig config = k3verdict::load_regression_config(rules_file);
  auto db = open_read_only(db_path);
  auto judged = std::make_unique<JudgedRun>();
  judged->run = k3verdict::load_run(*db, run_uuid);
  judged->verdict =
      k3verdict::compare_table_within_run(judged->run, config, noise_floor(*db, judged->run, config));
  return judged;
}

k3verdict::Verdict within_run_verdict(const std::string& db_path, const std::string& run_uuid, const std::string& rules_file) {
  k3verdict::Verdict v = judge_within_run(db_path, run_uuid, rules_file)->verdict;
  for (auto& c : v.cells) c.a = c.b = nullptr;  // they pointed into the run, gone with it
  return v;
}

Report build_report(const ReportRequest& request) {
  Report r;
  r.generated_at = k3store::now_utc();
  r.generator = request.generator;
  r.command_line = request.command_line;
  r.db_path = request.db_path;
  r.boards_dir = request.boards_dir;
  const k3verdict::RegressionConfig config =
      request.rules_file.empty() ? k3verdict::RegressionConfig{} : k3verdict::load_regression_config(request.rules_file);
  r.rules_file = config.source;
  const std::vector<Board> boards = load_boards(request.boards_dir);

  auto db = open_read_only(request.db_path);
  r.run = k3verdict::load_run(*db, request.run.empty() ? k3verdict::latest_run(*db) : request.run);
  if (request.baseline == "previous") {
    const std::string previous = k3verdict::previous_comparable_run(*db, r.run);
    if (previous.empty()) {
      r.verdict_note =
          "no earlier run on target " + r.run.target + " shares a configuration with this run";
    } else {
      r.baseline = k3verdict::load_run(*db, previous);
    }
  } else if (!request.baseline.empty()) {
    r.baseline = k3verdict::load_run(*db, request.baseline);
    if (r.baseline->run_uuid == r.run.run_uuid)
      throw ReportError("--baseline names the reported run itself");
  }
  const auto floor = noise_floor(*db, r.run, config);
  if (r.baseline) {
    r.verdict = k3verdict::compare_runs(*r.baseline, r.run, config, floor);
  } else if (r.run.builds.size() == 2 && !r.run.builds.front().label.empty()) {
    r.verdict = k3verdict::compare_within_run(r.run, config, floor);
  } else if (r.verdict_note.empty()) {
    r.verdict_note =
        "no baseline: figures only (--baseline RUN or --baseline previous for a verdict)";
  }

  r.trends = load_trends(*db, r.run, request.window, config);
  r.roofline = build_roofline(r.run, boards,
                              k3store::latest_target_probe(*db, r.run.target, r.run.cpu_model));
  // Tuning sessions up to the end of the window (or of the run, when no --until).
  const std::string until = !request.window.until.empty() ? window_until(request.window, r.run)
                            : r.run.finished_at.empty()   ? r.generated_at
                                                          : r.run.finished_at;
  r.tuning = load_tuning(*db, r.run, until);
  db.reset();

  if (request.keep_runners) {
    if (r.baseline) r.runner_notes = keep_run_runners(*r.baseline, request.runners_dir);
    for (auto& n : keep_run_runners(r.run, request.runners_dir)) {
      const bool same_build =
          std::any_of(r.runner_notes.begin(), r.runner_notes.end(),
                      [&](const std::string& m) { return m.substr(0, 20) == n.substr(0, 20); });
      if (!same_build) r.runner_notes.push_back(n);  // "runner <hash12>" already listed
    }
  }
  if (request.confirm && r.verdict && r.baseline) {
    confirm_suspected(*r.verdict, *r.baseline, r.run, request.confirm_ctx);
  } else if (request.confirm && r.verdict) {
    r.verdict->confirm_requested = true;  // within one run: already interleaved
  }
  return r;
}

}  // namespace k3reports
