// A report of one run, optionally against a baseline run, with its nightly trends, roofline,
// tuning landscapes and provenance -- written as summary.md (terminals, CI logs), report.html (one
// self-contained file with Vega-Lite charts) and report.json (the same data for other tools).
//
// The verdict: against --baseline RUN (Welch across runs, suspected regressions re-measured
// interleaved with --confirm), or, for a run that measured a baseline build alongside (bench
// --baseline-runner), the paired verdict within it. Exit status (ReportExit): regressions first,
// then failed cells of the run's own build.
#pragma once

#include <optional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/confirm.h"
#include "harness/host/verdict/regression_config.h"
#include "reports/roofline.h"
#include "harness/host/verdict/run_data.h"
#include "reports/trends.h"
#include "reports/tuning.h"
#include "harness/host/verdict/verdict.h"

namespace k3reports {

// The exit codes of `k3tune report` and `k3tune compare` (the CLI's own: 0, 2 bad command line).
enum ReportExit : int {
  kReportClean = 0,
  kReportCellsFailed = 3,  // no regression, but cells of the run failed (reasons in the summary)
  kReportRegressions = 4,  // regressions in the verdict (confirmed ones when confirming)
  kReportFailed = 5,       // no report: unknown run, bad rules or board file, unwritable output...
};

struct ReportRequest {
  std::string db_path;
  std::string run;       // id prefix; "" = the latest run
  std::string baseline;  // id prefix, "previous", or "" (no cross-run verdict)
  TrendWindow window;
  std::string out_dir;     // "" = <directory of the database>/reports/<run id>
  std::string rules_file;  // configs/regression.toml ("" = built-in defaults)
  std::string boards_dir;  // configs/boards
  std::string js_dir;      // the vendored Vega scripts (html.h)
  bool html = true;
  bool confirm = false;
  ConfirmContext confirm_ctx;  // used with confirm
  bool keep_runners = true;    // keep the run's runner binaries (runner_store.h)
  std::string runners_dir;
  std::string generator;  // "k3tune 0.1.0"
  std::string command_line;
};

struct Report {
  std::string generated_at, generator, command_line, db_path, rules_file, boards_dir;
  k3verdict::RunData run;
  std::optional<k3verdict::RunData> baseline;
  std::optional<k3verdict::Verdict> verdict;
  std::string verdict_note;  // why there is no verdict
  Trends trends;
  Roofline roofline;
  TuningData tuning;
  std::vector<std::string> runner_notes;  // what happened to the kept runners
  int exit_code() const;
};

// Keeps the runner binaries of every build of `run` (runner_store.h); one line per build.
std::vector<std::string> keep_run_runners(const k3verdict::RunData& run, const std::string& runners_dir);

// Reads everything, runs the confirm step if asked; ReportError on anything that prevents it.
// The within-run verdict of a stored run that measured two builds interleaved (bench
// --baseline-runner): exactly what `k3tune report RUN` decides for it (rules from `rules_file`,
// the target's noise floor from the database). ReportError when the run has not two builds.
// The cells' a/b figures are not kept (null): judge_within_run keeps them with their run.
k3verdict::Verdict within_run_verdict(const std::string& db_path, const std::string& run_uuid, const std::string& rules_file);
// The same verdict with the run it judged, whose cells the verdict's a/b point into.
struct JudgedRun {
  k3verdict::RunData run;
  k3verdict::Verdict verdict;
};
std::unique_ptr<JudgedRun> judge_within_run(const std::string& db_path, const std::string& run_uuid,
                                            const std::string& rules_file);
// The same for a run that measured cells with a tuning table and without (compare_table_within_run).
std::unique_ptr<JudgedRun> judge_table_within_run(const std::string& db_path,
                                                  const std::string& run_uuid,
                                                  const std::string& rules_file);

Report build_report(const ReportRequest& request);

nlohmann::json report_json(const Report& report);

}  // namespace k3reports
