// `k3tune report [RUN]`: the report of a run (default: the latest), optionally against a baseline
// run (--baseline RUN, or `previous`: the latest earlier run on the same target sharing a
// configuration), with its trends over a window of runs, into an output directory: summary.md
// (printed too), report.html, report.json (k3::reports). --confirm re-measures suspected
// slowdowns with both builds interleaved before the verdict. Exit: 0 clean, 3 failed cells,
// 4 regressions, 5 no report (reports/report.h).
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "apps/cli/app_context.h"
#include "reports/html.h"
#include "reports/markdown.h"
#include "reports/report.h"
#include "reports/report_files.h"
#include "apps/cli/report_context.h"
#include "reports/runner_store.h"

namespace k3cli {

void add_report_command(CLI::App& app, AppContext& ctx) {
  struct Args {
    k3reports::ReportRequest rq;
    std::string rules, boards, js;
    bool no_html = false, no_keep = false;
  };
  auto a = std::make_shared<Args>();
  auto& rq = a->rq;
  auto* cmd = app.add_subcommand(
      "report", "summary.md, report.html and report.json of a run; a verdict against a baseline");
  cmd->add_option("run", rq.run, "run id (prefix; default: the latest run)");
  cmd->add_option("--baseline", rq.baseline,
                  "baseline run id (prefix), or 'previous': the latest earlier run on the same "
                  "target with a configuration in common");
  cmd->add_flag("--confirm", rq.confirm,
                "re-measure suspected slowdowns now, baseline and candidate runners interleaved "
                "(their kept binaries), before the verdict");
  cmd->add_option("--since", rq.window.since, "trend window start, YYYY-MM-DD[THH:MM:SSZ] (UTC)");
  cmd->add_option("--until", rq.window.until, "trend window end (default: the run's start)");
  cmd->add_option("--last", rq.window.last, "without --since: the last N runs of the target")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("-o,--out", rq.out_dir,
                  "output directory (default: reports/<run id> next to the database)");
  cmd->add_option("--rules", a->rules,
                  "regression rules (default: <root>/configs/regression.toml)");
  cmd->add_option("--boards", a->boards, "board files (default: <root>/configs/boards)");
  cmd->add_option("--runners", rq.runners_dir,
                  "kept runner binaries (default: runners/ next to the database)");
  cmd->add_option("--js", a->js,
                  "vendored Vega scripts (default: $K3TUNE_JS_DIR or <root>/build/third_party/js)");
  cmd->add_flag("--no-html", a->no_html, "write summary.md and report.json only");
  cmd->add_flag("--no-keep", a->no_keep, "do not keep the runs' runner binaries");
  cmd->callback([&ctx, a, cmd] {
    try {
      k3reports::ReportRequest r = a->rq;
      r.db_path = ctx.db_path();
      r.rules_file = a->rules.empty() ? ctx.root + "/configs/regression.toml" : a->rules;
      r.boards_dir = a->boards.empty() ? ctx.root + "/configs/boards" : a->boards;
      r.js_dir = a->js.empty() ? default_js_dir(ctx) : a->js;
      r.html = !a->no_html;
      r.keep_runners = !a->no_keep;
      if (r.runners_dir.empty()) r.runners_dir = k3reports::default_runners_dir(r.db_path);
      r.generator = "k3tune " K3TUNE_VERSION;
      r.command_line = "k3tune report";
      for (const auto* o : cmd->get_options())
        if (o->count() > 0 && o->get_name() != "--help")
          for (const auto& v : o->results())
            r.command_line +=
                (o->get_name().rfind("-", 0) == 0 ? " " + o->get_name() : "") + " " + v;
      if (r.confirm) r.confirm_ctx = confirm_context(ctx, r.db_path, r.runners_dir);
      if (r.html) k3reports::load_vendored_scripts(r.js_dir);  // fail before any work
      const k3reports::Report report = k3reports::build_report(r);
      if (r.out_dir.empty())
        r.out_dir =
            (std::filesystem::absolute(r.db_path).parent_path() / "reports" / report.run.run_uuid)
                .string();
      const auto files = k3reports::write_report(report, r);
      if (ctx.json) {
        std::cout << k3reports::report_json(report).dump(2) << "\n";
      } else {
        std::cout << k3reports::summary_markdown(report);
        std::cout << "\nwritten:\n";
        for (const auto& f : files) std::cout << "  " << f << "\n";
      }
      exit_code() = report.exit_code();
    } catch (const std::exception& e) {
      std::cerr << "k3tune: report: " << e.what() << "\n";
      exit_code() = kReportFailed;
    }
  });
}

}  // namespace k3cli
