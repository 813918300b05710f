#include "apps/cli/app_context.h"

namespace k3cli {

void add_k3tune_cli(CLI::App& app, AppContext& ctx) {
  app.footer(
      "Exit codes: 0 ok; 1 problems found (doctor, db check; bisect: not reproduced); 2 bad input "
      "(nothing written); "
      "3 bench finished but some cells failed (report, compare: cells of the run failed); "
      "4 report, compare: regressions in the verdict; 5 report, compare: no report could be "
      "produced.\nEnvironment: K3TUNE_ROOT (source tree), K3TUNE_DB "
      "(database).");
  app.require_subcommand(1);
  app.add_option("--root", ctx.root, "source tree (configs/, build trees)")->capture_default_str();
  app.add_option("--db", ctx.db,
                 "results database (default: $K3TUNE_DB or <root>/results/k3tune.db)");
  app.add_option("--targets", ctx.targets_file,
                 "targets file (default: <root>/configs/targets.toml)");
  app.add_flag("--json", ctx.json, "machine-readable JSON on stdout");
  app.add_flag("-q,--quiet", ctx.quiet, "no progress line");
  add_doctor_command(app, ctx);
  add_build_command(app, ctx);
  add_probe_command(app, ctx);
  add_tcm_command(app, ctx);
  add_bench_command(app, ctx);
  add_db_command(app, ctx);
  add_compare_command(app, ctx);
  add_selfcheck_command(app, ctx);
  add_tune_command(app, ctx);
  add_tune_gates_command(app, ctx);
  add_count_command(app, ctx);
  add_table_command(app, ctx);
  add_farm_command(app, ctx);
  add_report_command(app, ctx);
  add_publish_command(app, ctx);
  add_model_command(app, ctx);
  add_nightly_command(app, ctx);
  add_bisect_command(app, ctx);
}

}  // namespace k3cli
