// `k3tune tune` and `k3tune tune-gates`: parse options, run the tuner (k3::tuner), print what it
// did (space sizes, measurements used, the choice and its evidence) and where the table went.
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "apps/cli/app_context.h"
#include "apps/cli/measuring_place.h"
#include "apps/cli/tune_slurm.h"
#include "harness/host/bench/progress.h"
#include "harness/host/farmbench/shard.h"
#include "harness/host/slurm/slurm_validate.h"
#include "harness/host/slurm/slurm_worker.h"
#include "tuner/campaign.h"
#include "tuner/gate_command.h"
#include "tuner/table.h"
#include "tuner/tune_command.h"

namespace k3cli {
namespace {

std::optional<int> stop_after_from_env() {
  const char* v = std::getenv("K3TUNE_TEST_TUNE_STOP_AFTER");
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::atoi(v);
}

nlohmann::json job_json(const k3tuner::TuneJobOutcome& j) {
  nlohmann::json o = {{"op", j.op},           {"shape", j.shape},      {"role", j.role},
                      {"session", j.session}, {"space", j.space_file}, {"resumed", j.resumed}};
  if (!j.note.empty()) o["note"] = j.note;
  o["excluded_emulated"] = j.excluded_emulated;
  o["result"] = j.result.to_json();
  o["measurements_new"] = j.result.new_measurements;
  if (!j.seed.entry_id.empty() || !j.seed.searched.empty()) o["seed"] = j.seed.to_json();
  o["cache_hits"] = j.result.cache_hits;
  o["disturbed"] = j.result.disturbed;
  o["unavailable"] = j.result.unavailable;
  return o;
}

// --heldout: one line per shape (losses in percent of its own best), then the mean and worst.
void print_heldout(const nlohmann::json& g) {
  fmt::print("held out, {} on {} ({} shapes): loss over each shape's best, %\n",
             g["op"].get<std::string>(), g["path"].get<std::string>(), g["shapes"].size());
  fmt::print("  {:<36} {:>8} {:>8} {:>8}\n", "shape", "rule", "nearest", "defaults");
  auto pct = [](const nlohmann::json& v) { return 100 * v.get<double>(); };
  for (const auto& s : g["shapes"])
    fmt::print("  {:<36} {:>8.2f} {:>8.2f} {:>8.2f}\n", s["shape"].get<std::string>(),
               pct(s["rule"]), pct(s["nearest"]), pct(s["defaults"]));
  for (const char* row : {"mean", "worst"})
    fmt::print("  {:<36} {:>8.2f} {:>8.2f} {:>8.2f}\n", row, pct(g[row]["rule"]),
               pct(g[row]["nearest"]), pct(g[row]["defaults"]));
}

void print_job(const k3tuner::TuneJobOutcome& j, bool explain) {
  const std::string label = fmt::format("{} {}{}", j.op, k3bench::to_kv(j.shape),
                                        j.role.empty() ? "" : " (" + j.role + ")");
  if (!j.note.empty()) {
    fmt::print("{}: skipped: {}\n", label, j.note);
    return;
  }
  const auto& c = j.result.counts;
  if (!c.enumerated) {
    fmt::print(
        "{}\n  space {}: {} combinations, more than the {} a search enumerates (distinct and valid "
        "not "
        "counted; narrow a knob)\n",
        label, j.space_file, c.product, k3tuner::kMaxEnumerated);
    return;
  }
  fmt::print(
      "{}\n  space {}: {} combinations, {} distinct (inactive knobs at their defaults), {} valid "
      "after the "
      "constraints{}{}\n",
      label, j.space_file, c.product, c.distinct, c.valid,
      c.excluded_by_flags
          ? fmt::format(", {} left out for a missing flag (e.g. --allow-hp)", c.excluded_by_flags)
          : "",
      j.excluded_emulated.empty()
          ? ""
          : fmt::format(", {} left out as emulated here (--force times them)",
                        j.excluded_emulated.size()));
  if (explain) return;
  const auto& r = j.result;
  const std::string cached =
      r.cache_hits > 0 ? fmt::format(", {} of them from the measurement cache", r.cache_hits) : "";
  const std::string missing =
      r.unavailable > 0 ? fmt::format(", {} asked for but never measured", r.unavailable) : "";
  const std::string voided =
      r.disturbed > 0 ? fmt::format(", {} disturbed and measured again", r.disturbed) : "";
  fmt::print("  {} measurements ({} new{}{}{}{}){}; {}\n", r.measurements, r.new_measurements,
             voided, cached, missing, j.resumed ? ", session resumed" : "",
             r.budget_exhausted ? ", BUDGET EXHAUSTED" : "", r.summary);
  if (r.chosen == SIZE_MAX) {
    fmt::print("  no configuration could be chosen (all rejected)\n");
    return;
  }
  const auto& e = r.evidence;
  const std::string interval =
      e.exact ? "exact"
      : e.conclusive()
          ? fmt::format("95% CI {:.3f}..{:.3f}{}", e.speedup_low, e.speedup_high,
                        e.paired ? fmt::format(", {} paired rounds", e.paired_rounds) : "")
          : fmt::format("{} paired rounds with the defaults: too few for an interval",
                        e.paired_rounds);
  fmt::print(
      "  chosen {}: {:.4g} (95% CI {:.4g}..{:.4g}, {} measurements); defaults {:.4g}; speed-up "
      "{:.3f}x ({})\n",
      k3params::to_kv(r.candidates[r.chosen].config), e.mean, e.ci_low, e.ci_high, e.processes,
      e.default_mean, e.speedup, interval);
  int rejected = 0;
  for (const auto& cand : r.candidates)
    if (cand.rejected) {
      if (rejected++ < 3) fmt::print("  rejected {}: {}\n", cand.key, cand.reason);
    }
  if (rejected > 3) fmt::print("  ... {} rejected in all\n", rejected);
}

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

// `tune --farm`: the campaign (tuner/campaign.h), printed per fingerprint group. On a farm that
// Slurm schedules the controller submits it as jobs (tune_slurm.h); inside such a job it is the
// campaign on the one board Slurm allocated, over the job's share of the sessions.
void run_campaign_command(const AppContext& ctx, const PlaceArgs& place, const CLI::App& cmd,
                          const k3tuner::TuneCommand& c, const SlurmShareArgs& share) {
  FarmBoards f = farm_boards(ctx, place, cmd);
  const bool slurm_farm = f.farm.scheduler.slurm();
  k3slurm::refuse_reservation_unless_slurm(f.farm, share.reservation);
  const bool worker = slurm_farm && k3slurm::inside_slurm_job();
  if ((!share.shard.empty() || !share.sessions.empty()) && !worker)
    throw k3bench::UserError(
        "--shard/--sessions: the share of a Slurm tuning campaign's job, set by its controller");
  if (slurm_farm && !worker) {
    if (c.explain)
      throw k3bench::UserError("--explain: give --target (a Slurm farm plans on the boards)");
    tune_on_slurm(ctx, place, share);
    return;
  }
  k3tuner::CampaignRequest rq;
  rq.farm = f.farm;
  rq.boards = f.boards;
  rq.command = c;
  if (worker) {
    rq.boards = {k3slurm::allocated_board(f.farm)};
    if (!share.shard.empty()) rq.sessions = k3farmbench::parse_shard(share.shard);
    if (!share.sessions.empty())
      rq.sessions.positions = k3farmbench::parse_cell_positions(share.sessions);
    rq.write_tables = share.shard.empty() && share.sessions.empty();  // else: a session job
  }
  std::mutex mu;
  rq.note = [&](const std::string& line) {
    std::lock_guard lock(mu);
    if (!ctx.quiet && !ctx.json) std::cerr << "k3tune: " << line << "\n";
  };
  rq.command.progress = nullptr;
  const k3tuner::CampaignOutcome out = k3tuner::run_campaign(ctx.root, rq);
  if (worker)
    for (const auto& [board, q] : out.quarantined)
      k3slurm::drain_faulty_board(k3slurm::SlurmClient(), board, q.first, q.second);
  if (ctx.json) {
    nlohmann::json groups = nlohmann::json::array();
    for (const auto& g : out.groups) {
      nlohmann::json jobs = nlohmann::json::array();
      for (const auto& j : g.outcome.jobs) jobs.push_back(job_json(j));
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
    for (const auto& [board, q] : out.quarantined)
      quarantined[board] = {{"fault", q.first}, {"reason", q.second}};
    std::cout << nlohmann::json{{"farm", f.farm.name},
                                {"groups", groups},
                                {"not_used", out.not_used},
                                {"quarantined", quarantined},
                                {"total_sessions",
                                 out.groups.empty() ? 0 : out.groups.front().session_labels.size()},
                                {"wall_s", out.wall_s}}
                     .dump(2)
              << "\n";
  } else {
    fmt::print("campaign on farm {}: {} fingerprint group(s); strategy {}, objective {}\n",
               f.farm.name, out.groups.size(), c.strategy, c.objective);
    for (const auto& [b, why] : out.not_used) fmt::print("board {} not used: {}\n", b, why);
    for (const auto& g : out.groups) {
      fmt::print("\nboards {}: {}\n", fmt::join(g.boards, ", "), g.outcome.facts.describe);
      if (!c.explain) {
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
        print_job(j, c.explain);
      }
      if (c.explain) fmt::print("{} sessions, {} valid configurations in all\n", sessions, valid);
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
    fmt::print("wall {:.1f} s\n", out.wall_s);
  }
  for (const auto& g : out.groups)
    for (const auto& p : g.outcome.table_problems)
      std::cerr << "k3tune: table invalid (not written): " << p << "\n";
  if (!out.complete() && !c.explain) exit_code() = kCellsFailed;
  for (const auto& g : out.groups)
    if (!g.outcome.table_problems.empty()) exit_code() = kProblems;
}

}  // namespace

void add_tune_command(CLI::App& app, AppContext& ctx) {
  struct Args {
    PlaceArgs place;
    k3tuner::TuneCommand c;
    bool allow_hp = false;
    SlurmShareArgs share;
  };
  auto a = std::make_shared<Args>();
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
  cmd->callback([&ctx, a, cmd] {
    auto& c = a->c;
    if (a->allow_hp) c.flags.insert("allow-hp");
    c.root = ctx.root;
    c.db_path = ctx.db_path();
    c.command_line = "k3tune tune";
    for (const auto* o : cmd->get_options())
      if (o->count() > 0 && o->get_name() != "--help")
        for (const auto& v : o->results())
          c.command_line += " " + o->get_name() + (v == "true" ? "" : " " + v);
    c.stop_after = stop_after_from_env();
    k3bench::Progress progress(0, !ctx.quiet && !c.explain);
    c.progress = [&](int used, const std::string& what) { progress.update(used, what); };
    if (!a->place.farm.empty()) {  // a campaign: sessions spread over the boards
      progress.finish();
      if (c.replay)
        throw k3bench::UserError("--replay reads this database only: give --target, not --farm");
      run_campaign_command(ctx, a->place, *cmd, c, a->share);
      return;
    }
    if (!a->share.reservation.empty() || !a->share.shard.empty() || !a->share.sessions.empty())
      throw k3bench::UserError(
          "--reservation/--shard/--sessions: a Slurm farm's options; give --farm");
    const MeasuringPlace place(ctx, a->place, *cmd);
    const auto out = k3tuner::run_tune(place.target(), c);
    progress.finish();
    if (ctx.json) {
      nlohmann::json jobs = nlohmann::json::array();
      for (const auto& j : out.jobs) jobs.push_back(job_json(j));
      nlohmann::json heldout = nlohmann::json::array(), suggestions = nlohmann::json::array();
      for (const auto& g : out.heldout) heldout.push_back(g.to_json());
      for (const auto& g : out.suggestions) suggestions.push_back(g.to_json());
      std::cout << nlohmann::json{{"target", out.facts.describe},
                                  {"jobs", jobs},
                                  {"heldout", heldout},
                                  {"suggestions", suggestions},
                                  {"table", out.table_path},
                                  {"table_problems", out.table_problems}}
                       .dump(2)
                << "\n";
    } else {
      fmt::print("target {}; strategy {}, objective {}{}\n", out.facts.describe, c.strategy,
                 c.objective,
                 c.replay ? " (replay of stored measurements: nothing run, nothing written)" : "");
      for (const auto& j : out.jobs) print_job(j, c.explain);
      for (const auto& g : out.heldout) print_heldout(g.to_json());
      for (const auto& g : out.suggestions) {
        fmt::print("measure next, {} on {} (predicted loss there, nearest measured shape):\n", g.op,
                   g.path);
        for (const auto& s : g.shapes)
          fmt::print("  --shape {:<28} {:>6.2f}%  {} ({}; {:.2f} log2 away)\n", s.shape.label,
                     100 * s.predicted_loss, s.shape.origin, s.nearest, s.distance);
      }
      if (!out.table_path.empty())
        fmt::print("table {} ({} entries)\n", out.table_path, out.table["entries"].size());
    }
    if (!out.table_problems.empty()) {
      for (const auto& p : out.table_problems)
        std::cerr << "k3tune: table invalid (not written): " << p << "\n";
      exit_code() = kProblems;
    }
  });

  struct GateArgs {
    PlaceArgs place;
    k3tuner::GateCommand c;
    std::string table;
  };
  auto g = std::make_shared<GateArgs>();
  auto* gates = app.add_subcommand("tune-gates",
                                   "fit the threshold rule of a binary choice over many shapes");
  add_place_options(gates, g->place);
  gates->add_option("--model", g->c.model, "include the shapes of configs/models/NAME.toml");
  gates->add_option("--gate", g->c.gate, "tcm_decode | decode_path | prefill_path")
      ->capture_default_str();
  gates->add_option("--objective", g->c.objective, "time | instructions")->capture_default_str();
  gates->add_option("--k", g->c.ks, "K values of the grid (tcm_decode, decode_path)")
      ->delimiter(',');
  gates->add_option("--n", g->c.ns, "N values of the grid (tcm_decode, decode_path)")
      ->delimiter(',');
  gates->add_option("--m", g->c.ms, "M values (prefill_path)")->delimiter(',');
  gates->add_option("--params", g->c.params, "parameters held fixed, k=v,...");
  gates->add_flag("--force", g->c.force, "measure emulated features anyway (labelled)");
  gates->add_option("--plugin", g->c.plugin,
                    "instructions: the qemu counting plugin (default build/third_party/...)");
  gates->add_option("--table", g->table,
                    "add the fitted gate to this tuning table (validated before writing)");
  gates->callback([&ctx, g, gates] {
    auto& c = g->c;
    c.root = ctx.root;
    c.db_path = ctx.db_path();
    c.progress = !ctx.quiet;
    c.command_line = "k3tune tune-gates --gate " + c.gate;
    c.note = [&](const std::string& line) {
      if (!ctx.quiet && !ctx.json) std::cerr << line << "\n";
    };
    nlohmann::json table;
    if (!g->table.empty()) table = k3tuner::read_table(g->table);
    const MeasuringPlace place(ctx, g->place, *gates);
    const auto out = k3tuner::run_gates(place.target(), c);
    const nlohmann::json rule = out.rule.to_json(c.gate);
    if (!g->table.empty()) {
      table["gates"][c.gate] = rule;
      const auto problems =
          k3tuner::validate_table(table, ctx.root + "/configs/schema/tuning-table.schema.json")
              .lines();
      if (!problems.empty())
        throw k3bench::UserError(
            fmt::format("{}: the table with the gate is invalid: {}", g->table, problems.front()));
      std::ofstream f(g->table);
      f << table.dump(2) << "\n";
    }
    if (ctx.json) {
      nlohmann::json points = nlohmann::json::array();
      for (const auto& p : out.points)
        points.push_back({{"shape", p.shape},
                          {"yes", p.yes},
                          {"no", p.no},
                          {"bytes", p.bytes},
                          {"rule_takes", out.rule.takes(c.gate, p)}});
      std::cout << nlohmann::json{{"gate", c.gate},
                                  {"rule", rule},
                                  {"wrong", out.rule.wrong},
                                  {"points", points},
                                  {"run_uuid", out.run_uuid},
                                  {"forced_emulated", out.forced_emulated}}
                       .dump(2)
                << "\n";
      return;
    }
    fmt::print(
        "gate {} on {}{}: {} shapes\n", c.gate, out.facts.describe,
        out.forced_emulated ? " (EMULATED features, forced: says nothing about a board)" : "",
        out.points.size());
    const char* choice = c.gate == "tcm_decode" ? "tcm on" : "ime2";
    const char* other = c.gate == "tcm_decode" ? "tcm off" : "rvv";
    fmt::print("  {:<32} {:>12} {:>12} {:>8}  rule picks\n", "shape", choice, other,
               c.gate == "tcm_decode" ? "on/off" : "ime2/rvv");
    for (const auto& p : out.points) {
      const bool take = out.rule.takes(c.gate, p);
      fmt::print("  {:<32} {:>12.4g} {:>12.4g} {:>8.3f}  {}{}\n", k3bench::to_kv(p.shape), p.yes,
                 p.no, p.yes / p.no, take ? choice : other,
                 (take ? p.yes > p.no : p.no > p.yes) ? "  (wrong)" : "");
    }
    fmt::print(
        "rule: {}; total loss against the per-shape best {:.2f}%, wrong on {} of {} shapes{}\n",
        rule.dump(), 100 * out.rule.loss, out.rule.wrong.size(), out.points.size(),
        g->table.empty() ? "" : "; written into " + g->table);
  });
}

}  // namespace k3cli
