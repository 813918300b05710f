// `k3tune tune`: parse options, run the tuner (k3::tuner), print what it
// did (space sizes, measurements used, the choice and its evidence) and where the table went.
#include <cstdlib>
#include <iostream>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "apps/cli/app_context.h"
#include "apps/cli/farm_work.h"
#include "apps/cli/measuring_place.h"
#include "harness/host/bench/progress.h"
#include "tuner/tune_command.h"
#include "tuner/tune_output.h"

namespace k3cli {
namespace {

std::optional<int> stop_after_from_env() {
  const char* v = std::getenv("K3TUNE_TEST_TUNE_STOP_AFTER");
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::atoi(v);
}

struct TuneArgs {
  PlaceArgs place;
  k3tuner::TuneCommand c;
  bool allow_hp = false;
  k3scheduler::SessionsRequest share;  // what a campaign on a farm takes beyond the command
};

// A campaign: the farm's scheduler hands the sessions to its boards.
void tune_on_farm(const AppContext& ctx, const TuneArgs& a) {
  if (a.c.replay)
    throw k3bench::UserError("--replay reads this database only: give --target, not --farm");
  const FarmBoards f = farm_boards(ctx, a.place);  // bad --board/--tag: nothing run
  k3scheduler::SessionsRequest rq = a.share;
  rq.command = a.c;
  rq.farm_file = a.place.farm;
  rq.boards = a.place.boards;
  rq.tags = a.place.tags;
  report_work(*f.scheduler->run_sessions(rq), ctx.json);
}

void run_tune_command(const AppContext& ctx, TuneArgs& a, const CLI::App& cmd) {
  auto& c = a.c;
  if (a.allow_hp) c.flags.insert("allow-hp");
  c.root = ctx.root;
  c.db_path = ctx.db_path();
  c.command_line = "k3tune tune";
  for (const auto* o : cmd.get_options())
    if (o->count() > 0 && o->get_name() != "--help")
      for (const auto& v : o->results())
        c.command_line += " " + o->get_name() + (v == "true" ? "" : " " + v);
  c.stop_after = stop_after_from_env();
  if (!a.place.farm.empty()) return tune_on_farm(ctx, a);
  if (!a.share.reservation.empty() || !a.share.shard.empty() || !a.share.sessions.empty())
    throw k3bench::UserError(
        "--reservation/--shard/--sessions: a Slurm farm's options; give --farm");
  k3bench::Progress progress(0, !ctx.quiet && !c.explain);
  c.progress = [&](int used, const std::string& what) { progress.update(used, what); };
  const MeasuringPlace place(ctx, a.place);
  const auto out = k3tuner::run_tune(place.target(), c);
  progress.finish();
  if (ctx.json)
    std::cout << k3tuner::tune_json(out).dump(2) << "\n";
  else
    k3tuner::print_tune(out, c);
  if (!out.table_problems.empty()) {
    for (const auto& p : out.table_problems)
      std::cerr << "k3tune: table invalid (not written): " << p << "\n";
    exit_code() = kProblems;
  }
}

}  // namespace

void add_tune_command(CLI::App& app, AppContext& ctx) {
  auto a = std::make_shared<TuneArgs>();
  auto& c = a->c;
  auto* cmd = app.add_subcommand(
      "tune", "search a space of kernel parameters per op and shape; write a tuning table");
  add_place_options(cmd, a->place);
  cmd->add_option("--model", c.model, "tune the shapes of configs/models/NAME.toml");
  cmd->add_option("--op", c.ops, "op (repeatable); with --model: only these ops");
  cmd->add_option("--shape", c.shapes, "shape k=v,... (repeatable, with --op)");
  cmd->add_option("--params", c.params, "parameters held fixed, k=v,...");
  cmd->add_option("--strategy", c.strategy, "exhaustive | random | racing | coordinate")
      ->capture_default_str();
  cmd->add_option("--objective", c.objective,
                  "time | instructions (qemu targets: a deterministic proxy) | auto (instructions "
                  "where emulated, "
                  "else time)")
      ->capture_default_str();
  cmd->add_option("--budget", c.budget, "measurements per shape at most (0: the strategy decides)")
      ->capture_default_str();
  cmd->add_option("--seed", c.options.seed, "seed of the random strategies")->capture_default_str();
  cmd->add_option("--spaces", c.spaces_dir,
                  "directory of search spaces <op>.toml (default configs/spaces)");
  cmd->add_option("-R,--reps", c.settings.repetitions, "time: repetitions per process")
      ->capture_default_str();
  cmd->add_option("--min-time", c.settings.min_time_s, "time: seconds per repetition at least")
      ->capture_default_str();
  cmd->add_option("--processes", c.options.processes,
                  "processes per configuration (exhaustive, random, coordinate)")
      ->capture_default_str();
  cmd->add_option("--min-rounds", c.options.min_rounds,
                  "racing: rounds before the first elimination")
      ->capture_default_str();
  cmd->add_option("--max-rounds", c.options.max_rounds, "racing: rounds at most")
      ->capture_default_str();
  cmd->add_option("--race-error", c.options.race_error, "racing: chance of ever dropping the best")
      ->capture_default_str();
  cmd->add_option("--samples", c.options.random_samples,
                  "random: configurations sampled (0: a quarter)");
  cmd->add_option("--max-sweeps", c.options.max_sweeps, "coordinate: passes over the knobs at most")
      ->capture_default_str();
  cmd->add_option("--finalists", c.options.finalists,
                  "coordinate: the best few measured again together at the end")
      ->capture_default_str();
  cmd->add_flag("--allow-hp", a->allow_hp,
                "let the IME2 .hp (fp16 accumulation) kernels be candidates");
  cmd->add_flag("--force", c.force,
                "time an emulated target or emulated features anyway (labelled in the table)");
  cmd->add_flag("--explain", c.explain,
                "print each space's size before and after the constraints; measure nothing");
  cmd->add_flag("--replay", c.replay,
                "run the strategy on measurements already stored (counts in the cache, times of "
                "earlier sessions of this build and target); run nothing, write nothing");
  cmd->add_flag("--heldout", c.heldout,
                "leave-one-shape-out over the shapes tuned: each one's loss (objective over its "
                "best, minus one) under the rule fitted on the others, the nearest other class "
                "and the defaults; writes no table");
  cmd->add_option("--suggest", c.suggest,
                  "name the N shapes (the models' shapes not tuned, and off-grid ones) whose "
                  "measurement would most reduce the rule's predicted loss; writes no table")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option(
      "--seed-table", c.seed_table,
      "start from another board's table: knobs that no differing board fact (CPUs, VLEN, TCM, "
      "marchid) touches are held at its values and verified; the others are searched");
  cmd->add_option("--out", c.out,
                  "table file (default results/tables/<target>-<model or op>-<time>.json)");
  cmd->add_option("--plugin", c.plugin,
                  "instructions: the qemu counting plugin (default build/third_party/...)");
  cmd->add_option("--reservation", a->share.reservation,
                  "a farm scheduled by Slurm: run the campaign's jobs in this Slurm reservation");
  cmd->add_flag("--resume", a->share.resume,
                "a Slurm farm's campaign: wait for the jobs an interrupted run of the same command "
                "left, merge them, go on (sessions always resume from the database by themselves)");
  // A Slurm job's share of the campaign's sessions, set by the controller (hidden).
  cmd->add_option("--shard", a->share.shard)->group("");
  cmd->add_option("--sessions", a->share.sessions)->group("");
  cmd->callback([&ctx, a, cmd] { run_tune_command(ctx, *a, *cmd); });
}

}  // namespace k3cli
