// `k3tune selfcheck stats`: parse options, run the selfcheck (k3::bench), store the noise floor,
// and report it (selfcheck_output.h: the rates with their intervals, or the JSON scripts read).
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/cli/app_context.h"
#include "apps/cli/selfcheck_output.h"
#include "harness/host/bench/bench_session.h"
#include "harness/host/bench/catalog.h"
#include "harness/host/bench/defaults.h"
#include "harness/host/bench/model_runs.h"
#include "harness/host/bench/progress.h"
#include "harness/host/bench/provenance.h"
#include "harness/host/bench/selfcheck.h"
#include "harness/host/bench/synthetic_runner.h"
#include "harness/host/store/database.h"
#include "harness/host/store/results.h"

namespace k3cli {
namespace {

// The effect the protocol's targets name (docs/measurement.md); what reaching it costs is printed.
constexpr double kDefaultTargetMde = 0.05;

struct Args {
  std::string target = "local";
  std::vector<std::string> cells = {"linear_decode n=2048,k=2048",
                                    "linear_prefill m=128,n=2048,k=2048"};
  int trials = 0;  // 0: 40 on a target, 2000 on the synthetic runner
  std::vector<double> slowdowns = {0.03, 0.05, 0.10};
  k3bench::ProcessPlan plan;
  // The bench's process budget, with shorter repetitions: the factor study found repetition
  // length does not change the process-to-process spread, and the selfcheck must fit ~15 minutes.
  double min_time_s = 0.02;
  int repetitions = k3bench::defaults::kRepetitions;
  double time_budget_s = 900;
  int within_processes = 0;  // opt-in: it doubles a trial's time
  double within_mde = -1;    // < 0: the minimum effect (table verify's default rule); 0: fixed
  int within_max_processes = 16;
  // A runner build directory holding libk3bench_plugin.so and libk3bench_plugin_planted.so ("":
  // no build pair). "runner": the target's own runner's directory.
  std::string build_pair;
  bool only_build_pair = false;  // the build pair alone (no rounds, no injected-work within design)
  // A whole-model cell instead of --cell: model_tg of this model (configs/models/NAME.toml), tg
  // decode steps after a one-token prompt, as `k3tune model --tg N` measures it.
  std::string model;
  int tg = 16;
  double target_mde = kDefaultTargetMde;  // the MDE whose price is printed
  bool synthetic = false;
  // The synthetic machine defaults to what the factor study measured on the shared 2-core VM:
  // log deviations correlated 0.63 with the next process and 0.14 with the hundredth, i.e. about
  // 3.5% independent process spread on a 5% drift correlated 0.98 between neighbours.
  k3bench::NoiseModel noise{.base_ns = 100000,
                            .between = 0.035,
                            .within = 0.005,
                            .drift = 0.05,
                            .drift_correlation = 0.98};
  std::uint64_t seed = 1;
  bool store = true;
  k3stats::CompareOptions compare;
  std::string estimator = k3stats::to_string(k3stats::CompareOptions{}.estimator);
};

// "op shape [params]" -> a cell normalised against the runner's catalog (or taken as given for the
// synthetic runner, which has no catalog).
k3bench::CellSpec parse_cell(const std::string& text, const k3bench::Catalog* catalog,
                             const k3bench::MeasureSettings& settings) {
  std::vector<std::string> parts;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const auto end = text.find(' ', pos);
    if (end != pos)
      parts.push_back(text.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  if (parts.size() < 2 || parts.size() > 3)
    throw k3bench::UserError(fmt::format(
        "--cell '{}': expected \"OP SHAPE [PARAMS]\", e.g. \"linear_decode n=2048,k=2048\"", text));
  k3bench::CellSpec c;
  c.op = parts[0];
  c.settings = settings;
  const auto shape = k3bench::parse_kv(parts[1], "--cell " + text);
  const auto params = parts.size() == 3 ? k3bench::parse_kv(parts[2], "--cell " + text)
                                        : std::map<std::string, std::string>{};
  if (catalog != nullptr) {
    const k3bench::OpSpec& op = catalog->op(c.op, "--cell");
    c.shape = catalog->normalise(op, shape, true, "--cell " + text);
    c.params = catalog->normalise(op, params, false, "--cell " + text);
  } else {
    c.shape = shape;
    c.params = params;
  }
  return c;
}

// The whole-model decode cell `k3tune model --tg N` measures (model_tg after a one-token prompt),
// normalised against the runner's catalog.
k3bench::CellSpec model_cell(const std::string& models_dir, const std::string& model, int tg,
                             const k3bench::Catalog& catalog,
                             const k3bench::MeasureSettings& settings) {
  k3model::ModelConfig config;
  try {
    config = k3model::load_model_config(k3model::resolve_model_path(model, models_dir));
  } catch (const k3model::ModelConfigError& e) {
    throw k3bench::UserError(e.what());
  }
  k3bench::ModelRuns runs;
  runs.decode_steps = {tg};
  const auto [op_name, shape, role] = k3bench::model_run_shapes(config, runs).at(0);
  k3bench::CellSpec c;
  c.op = op_name;
  c.settings = settings;
  c.settings.set("iterations", "1", "--model");  // one decode run per repetition, as k3tune model
  const k3bench::OpSpec& op = catalog.op(c.op, "--model");
  c.shape = catalog.normalise(op, shape, true, "--model " + model);
  c.params = catalog.normalise(op, {}, false, "--model " + model);
  return c;
}

SelfcheckReport report_of(const Args& a) {
  return {.synthetic = a.synthetic,
          .only_build_pair = a.only_build_pair,
          .within_processes = a.within_processes,
          .build_pair = a.build_pair,
          .target_mde = a.target_mde,
          .min_time_s = a.min_time_s,
          .repetitions = a.repetitions,
          .compare = a.compare};
}

// The process budget of each configuration: the bench's unless the options say otherwise.
k3bench::RoundsOptions selfcheck_rounds(const Args& a) {
  k3bench::RoundsOptions rounds;
  rounds.min_processes = a.plan.processes > 0 ? a.plan.processes : k3bench::defaults::kMinProcesses;
  rounds.target_ci = a.plan.target_ci >= 0 ? a.plan.target_ci : k3bench::defaults::kTargetCi;
  rounds.max_processes = a.plan.max_processes > 0 ? a.plan.max_processes
                         : rounds.target_ci > 0
                             ? std::max(k3bench::defaults::kMaxProcesses, rounds.min_processes)
                             : rounds.min_processes;
  if (a.plan.mde > 0) {  // bench --mde's sequential rule instead of Stein's N
    if (a.compare.estimator != k3stats::PairedEstimator::kHodgesLehmann)
      throw k3bench::UserError(
          "--mde: only with --estimator hodges-lehmann (the rule keeps the "
          "signed-rank test exact, not the t-test)");
    rounds.target_mde = a.plan.mde;
    rounds.target_ci = 0;
    rounds.max_processes = a.plan.max_processes > 0 ? a.plan.max_processes
                                                    : std::max(k3bench::defaults::kMdeMaxProcesses,
                                                               rounds.min_processes);
  }
  rounds.alpha = a.compare.alpha;
  rounds.power = a.compare.power;
  return rounds;
}

// The selfcheck's options but for its cells and what depends on the runner (timeout, build pair).
k3bench::SelfcheckOptions selfcheck_options(const Args& a, const k3bench::RoundsOptions& rounds) {
  k3bench::SelfcheckOptions opt;
  opt.rounds = rounds;
  opt.slowdowns = a.slowdowns;
  opt.compare = a.compare;
  opt.time_budget_s = a.synthetic ? 0 : a.time_budget_s;
  opt.target_mde = a.target_mde;
  opt.injected_designs = !a.only_build_pair;
  opt.trials = a.trials > 0 ? a.trials : a.synthetic ? 2000 : 40;
  opt.within_processes = a.within_processes;
  opt.within_mde = a.within_mde >= 0 ? a.within_mde : a.compare.min_effect;
  opt.within_max_processes = a.within_max_processes;
  if (a.only_build_pair && a.build_pair.empty())
    throw k3bench::UserError("--only-build-pair: give --build-pair DIR (the pair it measures)");
  if (!a.model.empty() && a.synthetic)
    throw k3bench::UserError(
        "--model: a whole-model cell needs a target's runner, not --synthetic");
  if (!a.build_pair.empty() && a.within_processes <= 0)
    throw k3bench::UserError(
        "--build-pair: the builds are compared within one process: give --within-processes N");
  return opt;
}

// What runs the processes: the synthetic runner, or the target's k3bench (its build measured).
struct SelfcheckRunner {
  std::unique_ptr<k3targets::Target> target;  // null: synthetic
  std::unique_ptr<k3bench::ProcessExecutor> executor;
  k3bench::SweepBuild build;
  std::string target_name = "synthetic";
};

// The runner, and the cells it measures (opt.cells) with their timeout.
SelfcheckRunner selfcheck_runner(const AppContext& ctx, const Args& a,
                                 k3bench::SelfcheckOptions& opt) {
  k3bench::MeasureSettings settings;
  settings.min_time_s = a.min_time_s;
  settings.repetitions = a.repetitions;
  SelfcheckRunner runner;
  if (a.synthetic) {
    runner.executor = std::make_unique<k3bench::SyntheticExecutor>(a.noise, a.seed);
    for (const auto& c : a.cells) opt.cells.push_back(parse_cell(c, nullptr, settings));
    return runner;
  }
  runner.target = ctx.target(a.target);
  runner.target_name = runner.target->name();
  const k3bench::Catalog catalog = k3bench::Catalog::from_target(*runner.target);
  if (!a.model.empty())
    opt.cells = {model_cell(ctx.models_dir(), a.model, a.tg, catalog, settings)};
  else
    for (const auto& c : a.cells) opt.cells.push_back(parse_cell(c, &catalog, settings));
  runner.executor = std::make_unique<k3bench::RunnerExecutor>();
  runner.build = {runner.target.get(), k3bench::sha256_file(runner.target->runner_path()), ""};
  opt.timeout_s = runner.target->config().timeout_s;
  return runner;
}

// Each cell's noise floor, kept per target and CPU for the verdicts that raise a threshold to it.
void store_noise_floors(const AppContext& ctx, const k3bench::SelfcheckResult& r,
                        const std::string& target_name, const k3bench::RoundsOptions& rounds) {
  auto db = k3store::open_for_writing(ctx.db_path());
  const std::string now = k3store::now_utc();
  k3store::Transaction tx(*db);
  for (const auto& c : r.cells) {
    k3store::insert_noise_floor(
        *db, {target_name, c.cpu_model, c.cell.op, c.cell.shape.dump(), now, c.trials,
              c.mean_processes, c.noise_floor, c.abs_diff_q95, c.minimum_detectable_effect,
              nlohmann::json{{"params", c.cell.params},
                             {"measure", c.cell.settings.to_json()},
                             {"min_processes", rounds.min_processes},
                             {"max_processes", rounds.max_processes},
                             {"target_ci", rounds.target_ci}}
                  .dump()});
  }
  tx.commit();
}

void run(const AppContext& ctx, Args a) {
  a.compare.estimator = k3stats::paired_estimator_from(a.estimator);
  const k3bench::RoundsOptions rounds = selfcheck_rounds(a);
  k3bench::SelfcheckOptions opt = selfcheck_options(a, rounds);
  const SelfcheckRunner runner = selfcheck_runner(ctx, a, opt);
  if (!a.build_pair.empty()) {
    // The plugins where the runner runs: a runner build directory holds both.
    const std::string dir =
        a.build_pair != "runner" ? a.build_pair
        : runner.target ? std::filesystem::path(runner.target->runner_path()).parent_path().string()
                        : std::string("runner");
    opt.build_pair_plugin = dir + "/libk3bench_plugin.so";
    opt.build_pair_planted = dir + "/libk3bench_plugin_planted.so";
  }
  k3bench::Progress progress(opt.trials, !ctx.quiet);
  const k3bench::SelfcheckResult r = run_selfcheck(
      *runner.executor, runner.build, opt, [&](int done, int total, const std::string& what) {
        progress.set_total(total);
        progress.update(done, fmt::format("trial {}/{} {}", done + 1, total, what));
      });
  progress.finish();
  if (!a.synthetic && a.store) store_noise_floors(ctx, r, runner.target_name, rounds);
  if (ctx.json)
    std::cout << selfcheck_json(r, rounds, report_of(a), runner.target_name).dump(2) << "\n";
  else
    print_selfcheck(r, rounds, report_of(a), runner.target_name);
}

// Which cells, on which target, with which slowdowns injected.
void add_selfcheck_cell_options(CLI::App* stats, Args& a) {
  stats->add_option("--target", a.target, "target name")->capture_default_str();
  stats->add_option("--cell", a.cells, "representative cell \"OP SHAPE [PARAMS]\" (repeatable)")
      ->capture_default_str();
  stats->add_option("--trials", a.trials, "trials (default 40; 2000 with --synthetic)")
      ->check(CLI::Range(1, 1000000));
  stats->add_option("--slowdown", a.slowdowns, "injected slowdowns as fractions (repeatable)")
      ->capture_default_str();
}

// The rounds design's budget per configuration.
void add_selfcheck_budget_options(CLI::App* stats, Args& a) {
  stats->add_option("-P,--processes", a.plan.processes,
                    "processes per configuration at least (default: bench's)");
  stats->add_option("--max-processes", a.plan.max_processes, "adaptive ceiling (default: bench's)");
  stats->add_option("--target-ci", a.plan.target_ci, "adaptive CI target (default: bench's)");
  stats
      ->add_option("--mde", a.plan.mde,
                   "add rounds until the minimum detectable effect is at most this fraction "
                   "(bench --mde's rule) instead of the two-stage count")
      ->check(CLI::Range(0.001, 0.99));
  stats->add_option("-R,--reps", a.repetitions, "repetitions per process")->capture_default_str();
}

// The within-process designs: injected extra work, and the build pair.
void add_selfcheck_within_options(CLI::App* stats, Args& a) {
  stats
      ->add_option("--within-processes", a.within_processes,
                   "processes per verdict of the within-process design (A and B alternating "
                   "repetitions in one process), measured in the same trials (8 is a good choice; "
                   "a trial takes about twice as long); 0: not measured")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  stats
      ->add_option("--within-mde", a.within_mde,
                   "the within design's budget, as table verify's: after --within-processes, add "
                   "processes of a configuration until the sign-free MDE is at most this "
                   "(default: --min-effect; 0: exactly --within-processes)")
      ->check(CLI::Range(0.0, 0.99));
  stats
      ->add_option("--within-max-processes", a.within_max_processes,
                   "the within design's ceiling while its MDE is above --within-mde")
      ->check(CLI::Range(2, 10000))
      ->capture_default_str();
  stats
      ->add_option("--build-pair", a.build_pair,
                   "also measure two builds within one process (k3bench --build-b, with the "
                   "within design's budget): A against DIR/libk3bench_plugin.so (the same source "
                   "built twice) and against DIR/libk3bench_plugin_planted.so (a slowdown compiled "
                   "in); DIR \"runner\": the target's runner's own build directory")
      ->type_name("DIR");
  stats->add_flag("--only-build-pair", a.only_build_pair,
                  "measure the build pair alone: neither the rounds design nor the injected-work "
                  "within design (for whole-model cells, where one process takes seconds)");
}

// A whole-model cell instead of --cell, and the price and time of the whole selfcheck.
void add_selfcheck_model_and_time_options(CLI::App* stats, Args& a) {
  stats
      ->add_option("--model", a.model,
                   "instead of --cell: the whole-model decode cell of this model "
                   "(configs/models/NAME.toml), --tg decode steps as `k3tune model --tg` measures "
                   "them")
      ->type_name("NAME");
  stats->add_option("--tg", a.tg, "--model: decode steps per repetition")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  stats
      ->add_option("--target-mde", a.target_mde,
                   "the minimum detectable effect whose price (processes and wall time per "
                   "verdict) is printed for each design")
      ->check(CLI::Range(0.001, 0.99))
      ->capture_default_str();
  stats->add_option("--min-time", a.min_time_s, "seconds per repetition")->capture_default_str();
  stats->add_option("--time-budget", a.time_budget_s, "start no new trial after this many seconds")
      ->capture_default_str();
}

// The A/B test the verdicts are judged with.
void add_selfcheck_test_options(CLI::App* stats, Args& a) {
  stats->add_option("--min-effect", a.compare.min_effect, "minimum relative effect")
      ->capture_default_str();
  stats->add_option("--alpha", a.compare.alpha, "significance level")->capture_default_str();
  stats
      ->add_option("--estimator", a.estimator,
                   "paired estimator and test: hodges-lehmann (Wilcoxon signed-rank) or mean "
                   "(paired t)")
      ->check(CLI::IsMember({"hodges-lehmann", "mean"}))
      ->capture_default_str();
}

// The synthetic runner's noise (--synthetic).
void add_selfcheck_synthetic_options(CLI::App* stats, Args& a) {
  stats->add_flag("--synthetic", a.synthetic,
                  "a seeded synthetic-noise runner instead of the target (truth known)");
  stats->add_option("--noise-between", a.noise.between, "synthetic: sd of the log process level")
      ->capture_default_str();
  stats->add_option("--noise-within", a.noise.within, "synthetic: sd of the log repetition noise")
      ->capture_default_str();
  stats->add_option("--noise-drift", a.noise.drift, "synthetic: sd of the machine's log drift")
      ->capture_default_str();
  stats
      ->add_option("--noise-drift-correlation", a.noise.drift_correlation,
                   "synthetic: correlation of the drift between consecutive processes")
      ->capture_default_str();
  stats
      ->add_option("--noise-tail-df", a.noise.between_df,
                   "synthetic: Student t process levels with this many degrees of freedom (0: "
                   "normal)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  stats
      ->add_option("--noise-contamination", a.noise.contamination,
                   "synthetic: chance that a process is slowed by a disturbance")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  stats
      ->add_option("--noise-contamination-scale", a.noise.contamination_scale,
                   "synthetic: sd of a disturbance's log slowdown")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  stats->add_option("--seed", a.seed, "synthetic: seed")->capture_default_str();
}

}  // namespace

void add_selfcheck_command(CLI::App& app, AppContext& ctx) {
  auto* sc = app.add_subcommand("selfcheck", "check k3tune itself");
  sc->require_subcommand(1);
  auto a = std::make_shared<Args>();
  auto* stats = sc->add_subcommand("stats",
                                   "measured false-positive and detection rates of the A/B test, "
                                   "the noise floor and the minimum "
                                   "detectable effect at the default budget");
  add_selfcheck_cell_options(stats, *a);
  add_selfcheck_budget_options(stats, *a);
  add_selfcheck_within_options(stats, *a);
  add_selfcheck_model_and_time_options(stats, *a);
  add_selfcheck_test_options(stats, *a);
  stats->add_flag("!--no-store", a->store, "do not record the noise floor in the database");
  add_selfcheck_synthetic_options(stats, *a);
  stats->callback([&ctx, a] { run(ctx, *a); });
}

}  // namespace k3cli
