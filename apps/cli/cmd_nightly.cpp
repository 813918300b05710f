// `k3tune nightly`: the nightly job in one resumable command (k3::nightly). Thin: parse, run,
// print where the artifacts are.
#include <unistd.h>

#include <climits>

#include <fmt/format.h>

#include "apps/cli/app_context.h"
#include "apps/nightly/nightly.h"

namespace k3cli {

void add_nightly_command(CLI::App& app, AppContext& ctx) {
  auto rq = std::make_shared<k3nightly::NightlyRequest>();
  auto no_build = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand(
      "nightly",
      "the nightly job: build, deploy + probe, bench on the farm, tune, tables, table verify, "
      "verdict against the previous nightly, report (exit 0 ok, 1 a step failed, 3 cells failed, "
      "4 regression)");
  cmd->add_option("--profile", rq->profile, "quick | full | smoke (host only, for tests)")
      ->capture_default_str();
  cmd->add_option("--farm", rq->farm, "farm file, or 'local' (host + qemu boards)")
      ->capture_default_str();
  cmd->add_option("--dir", rq->dir, "artifacts directory (default <root>/nightly/<UTC stamp>)");
  cmd->add_option("--resume", rq->resume,
                  "continue the nightly of this directory: steps done are skipped, measured "
                  "cells are kept");
  cmd->add_option("--reservation", rq->reservation,
                  "a farm scheduled by Slurm: run the bench steps' jobs in this Slurm reservation");
  cmd->add_option("--site", rq->site,
                  "folder of the site `k3tune publish` updates after the night (default: 'site' "
                  "beside the nightly's folder; 'none': no site)");
  cmd->add_option("--config", rq->notify_config,
                  "nightly configuration (TOML): notify = [\"cmd\", args...] run after a confirmed "
                  "regression or a board fault, notify_timeout_s, report_base_url, site_url");
  cmd->add_flag("--no-build", *no_build, "use the runners already built (no build steps)");
  cmd->callback([&ctx, rq, no_build] {
    k3nightly::NightlyRequest r = *rq;
    r.build = !*no_build;
    r.root = ctx.root;
    r.db_path = ctx.db_path();
    r.targets_file = ctx.targets_file;
    char self[PATH_MAX] = {};
    const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) throw k3bench::UserError("nightly: cannot find the k3tune binary (/proc/self/exe)");
    r.self_exe = std::string(self, static_cast<std::size_t>(n));
    const k3nightly::NightlyOutcome o = k3nightly::run_nightly(r);
    fmt::print(
        "nightly {}: {} ({:.0f} s, exit {})\n  summary  {}/summary.md (steps: {}/nightly.md)\n"
        "  report   {}/report.html\n  site     {}\n  tables   {}/tables/\n  database {}\n",
        o.id, o.verdict, o.wall_s, o.exit_code, o.dir, o.dir, o.dir,
        o.site.empty() ? o.publish_note : o.site + "/index.html", o.dir, r.db_path);
    exit_code() = o.exit_code;
  });
}

}  // namespace k3cli
