// `k3tune db export|merge|check`.
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/cli/app_context.h"
#include "harness/host/store/database.h"
#include "harness/host/store/maintenance.h"
#include "harness/host/verdict/run_data.h"
#include "reports/report_error.h"
#include "reports/run_export.h"

namespace k3cli {
namespace {

// A run in another tool's format (reports/run_export.h): Google Benchmark JSON or Bencher Metric
// Format, the latter checked against configs/schema/bmf.schema.json before it is written.
std::string run_export_text(const AppContext& ctx, const std::string& format,
                            const std::string& run_arg) {
  auto c = k3store::open_database(ctx.db_path(), k3store::OpenMode::kReadOnly);
  try {
    const std::string run = run_arg == "latest" ? k3verdict::latest_run(*c) : run_arg;
    const k3verdict::RunData data = k3verdict::load_run(*c, run);
    if (format == "gbench") return k3reports::gbench_json(*c, data).dump(2) + "\n";
    const nlohmann::json doc = k3reports::bmf_json(data);
    const std::string schema = ctx.root + "/configs/schema/bmf.schema.json";
    if (const auto problems = k3reports::schema_problems(doc, schema); !problems.empty())
      throw k3bench::UserError(
          fmt::format("--format bmf: the export of run {} does not conform to {}: {}",
                      data.run_uuid, schema, problems.front()));
    return doc.dump(2) + "\n";
  } catch (const k3reports::ReportError& e) {
    throw k3bench::UserError(fmt::format("--run: {}", e.what()));
  }
}

}  // namespace

void add_db_command(CLI::App& app, AppContext& ctx) {
  auto* db = app.add_subcommand("db", "export, merge or check a results database");
  db->require_subcommand(1);

  struct ExportArgs {
    std::string table = "aggregates", format = "csv", out, run;
  };
  auto e = std::make_shared<ExportArgs>();
  auto* exp = db->add_subcommand(
      "export",
      "write one table as CSV or JSON (aggregates include their cell), or one run as Google "
      "Benchmark JSON (gbench) or Bencher Metric Format (bmf)");
  exp->add_option("--table", e->table, "aggregates|samples|processes|cells|runs|builds")
      ->capture_default_str();
  exp->add_option("--format", e->format, "csv|json (a table), gbench|bmf (a run)")
      ->capture_default_str();
  exp->add_option("--run", e->run,
                  "gbench|bmf: the run (id or prefix, or 'latest'; default latest)");
  exp->add_option("-o,--out", e->out, "output file (default: stdout)");
  exp->callback([&ctx, e, exp] {
    const bool run_format = e->format == "gbench" || e->format == "bmf";
    if (!run_format && !e->run.empty())
      throw k3bench::UserError(
          fmt::format("--run: only with --format gbench or bmf (not '{}')", e->format));
    if (run_format && exp->get_option("--table")->count() > 0)
      throw k3bench::UserError(
          fmt::format("--table: not with --format {} (it exports a run)", e->format));
    // Render fully before creating the file, so a failure leaves nothing behind.
    std::ostringstream text;
    if (run_format) {
      text << run_export_text(ctx, e->format, e->run.empty() ? "latest" : e->run);
    } else {
      auto c = k3store::open_database(ctx.db_path(), k3store::OpenMode::kReadOnly);
      k3store::export_table(*c, e->table, ctx.json ? "json" : e->format, text);
    }
    if (e->out.empty()) {
      std::cout << text.str();
      return;
    }
    std::ofstream f(e->out);
    if (!(f << text.str())) throw k3bench::UserError(fmt::format("{}: cannot write", e->out));
  });

  auto shards = std::make_shared<std::vector<std::string>>();
  auto* merge =
      db->add_subcommand("merge", "merge shard databases into --db (idempotent: no duplicates)");
  merge->add_option("shards", *shards, "shard database files")->required();
  merge->callback([&ctx, shards] {
    const auto added = k3store::merge_databases(ctx.db_path(), *shards);
    if (ctx.json) {
      std::cout << nlohmann::json{{"db", ctx.db_path()}, {"added", added}}.dump(2) << "\n";
      return;
    }
    std::string parts;
    for (const auto& [t, n] : added)
      parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", n, t);
    fmt::print("merged {} shard(s) into {}: added {}\n", shards->size(), ctx.db_path(), parts);
  });

  auto* check =
      db->add_subcommand("check", "integrity check: SQLite, foreign keys, k3tune invariants");
  check->callback([&ctx] {
    auto c = k3store::open_database(ctx.db_path(), k3store::OpenMode::kReadOnly);
    const auto problems = k3store::check_database(*c);
    const auto rows = k3store::result_row_counts(*c);
    if (ctx.json) {
      std::cout << nlohmann::json{{"db", ctx.db_path()},
                                  {"ok", problems.empty()},
                                  {"problems", problems},
                                  {"rows",
                                   {{"builds", rows.builds},
                                    {"runs", rows.runs},
                                    {"cells", rows.cells},
                                    {"processes", rows.processes},
                                    {"samples", rows.samples},
                                    {"aggregates", rows.aggregates}}}}
                       .dump(2)
                << "\n";
    } else {
      for (const auto& p : problems) fmt::print("problem: {}\n", p);
      fmt::print("{}: {} ({} builds, {} runs, {} cells, {} processes, {} samples, {} aggregates)\n",
                 ctx.db_path(),
                 problems.empty() ? "ok" : fmt::format("{} problem(s)", problems.size()),
                 rows.builds, rows.runs, rows.cells, rows.processes, rows.samples, rows.aggregates);
    }
    if (!problems.empty()) exit_code() = kProblems;
  });
}

}  // namespace k3cli
