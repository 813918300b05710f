// `k3tune compare RUN_A RUN_B`: the regression verdict of run B against run A, exactly as `k3tune
// report B --baseline A` states it (k3::reports): for every configuration measured in both runs
// (same target, op, shape, params and measurement settings; builds may differ), Welch's t-test on
// process means, the op's minimum effect from configs/regression.toml raised to the target's
// measured noise floor, the minimum detectable effect of each "unchanged", accuracy flags, failed
// cells. Runs from different times are a screening test on a machine that drifts: --confirm
// re-measures what it suspects with both builds' runners interleaved. Exit codes as `report`.
#include <iostream>

#include <nlohmann/json.hpp>

#include "apps/cli/app_context.h"
#include "harness/host/store/database.h"
#include "reports/markdown.h"
#include "reports/report.h"
#include "apps/cli/report_context.h"
#include "reports/runner_store.h"

namespace k3cli {

void add_compare_command(CLI::App& app, AppContext& ctx) {
  struct Args {
    std::string a, b, rules, runners;
    std::optional<double> alpha, min_effect;
    bool ignore_noise_floor = false, confirm = false;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "compare",
      "regression verdict of run B against run A (the report's verdict, in the terminal)");
  cmd->add_option("run_a", args->a, "baseline run id (prefix)")->required();
  cmd->add_option("run_b", args->b, "candidate run id (prefix)")->required();
  cmd->add_option("--rules", args->rules,
                  "regression rules (default: <root>/configs/regression.toml)");
  cmd->add_option("--alpha", args->alpha, "significance level (overrides the rules)");
  cmd->add_option("--min-effect", args->min_effect,
                  "smallest relative difference worth calling, for every op (overrides the rules)");
  cmd->add_flag("--ignore-noise-floor", args->ignore_noise_floor,
                "use the minimum effects alone, not the target's measured noise floor");
  cmd->add_flag("--confirm", args->confirm,
                "re-measure suspected slowdowns now, both builds' kept runners interleaved");
  cmd->add_option("--runners", args->runners,
                  "kept runner binaries (default: runners/ next to the database)");
  cmd->callback([&ctx, args] {
    try {
      const std::string db_path = ctx.db_path();
      const std::string rules =
          args->rules.empty() ? ctx.root + "/configs/regression.toml" : args->rules;
      k3verdict::RegressionConfig config = k3verdict::load_regression_config(rules);
      if (args->alpha) config.alpha = *args->alpha;
      if (args->min_effect) {
        config.min_effect = *args->min_effect;
        config.op_min_effect.clear();
      }
      if (args->ignore_noise_floor) config.use_noise_floor = false;
      const std::string runners =
          args->runners.empty() ? k3reports::default_runners_dir(db_path) : args->runners;
      auto db = k3store::open_database(db_path, k3store::OpenMode::kReadOnly);
      const auto base = k3verdict::load_run(*db, args->a);
      const auto cand = k3verdict::load_run(*db, args->b);
      std::optional<k3store::NoiseFloorRecord> floor;
      if (config.use_noise_floor)
        floor = k3store::latest_noise_floor(*db, cand.target, cand.cpu_model);
      db.reset();
      k3verdict::Verdict v = k3verdict::compare_runs(base, cand, config, floor);
      k3reports::keep_run_runners(base, runners);
      k3reports::keep_run_runners(cand, runners);
      if (args->confirm)
        k3reports::confirm_suspected(v, base, cand, confirm_context(ctx, db_path, runners));
      if (ctx.json)
        std::cout << k3verdict::to_json(v).dump(2) << "\n";
      else
        std::cout << k3reports::verdict_markdown(v);
      bool failed = false;
      for (const auto& c : cand.cells)
        failed = failed || (c.build_hash == cand.build_hash && !c.ok);
      exit_code() = v.regressions() > 0 ? kRegressions : failed ? kCellsFailed : kOk;
    } catch (const std::exception& e) {
      std::cerr << "k3tune: compare: " << e.what() << "\n";
      exit_code() = kReportFailed;
    }
  });
}

}  // namespace k3cli
