#include "harness/host/farmbench/farm_sweep.h"

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "harness/host/bench/catalog.h"
#include "harness/host/bench/provenance.h"
#include "harness/host/bench/user_error.h"
#include "harness/host/farm/open_files.h"
#include "harness/host/farmbench/board_worker.h"
#include "harness/host/store/database.h"
#include "harness/host/store/database_writer.h"
#include "harness/host/store/farm_sweeps.h"
#include "harness/host/store/results.h"

namespace k3farmbench {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> chosen_boards(const k3farm::FarmConfig& farm, const FarmBenchRequest& rq) {
  try {
    return k3farm::select_boards(farm, rq.boards, rq.tags);
  } catch (const std::invalid_argument& e) {
    throw k3bench::UserError(e.what());
  }
}

// `boards` with those under a standing quarantine (an earlier run's, in the database at `db_path`)
// last, so the catalog is asked from a board that is expected to answer. Reads only; a database
// that cannot be read that way (absent, older schema) changes nothing.
std::vector<std::string> standing_quarantines_last(const std::vector<std::string>& boards,
                                                   const std::string& farm,
                                                   const std::string& db_path) {
  std::map<std::string, k3store::BoardEventRow> states;
  try {
    if (std::filesystem::exists(db_path))
      states = k3store::board_states(*k3store::open_database(db_path, k3store::OpenMode::kReadOnly),
                                     farm);
  } catch (const k3store::StoreError&) {
  }
  std::vector<std::string> out;
  for (int quarantined = 0; quarantined < 2; ++quarantined)
    for (const auto& b : boards)
      if ((states.count(b) && states[b].quarantined()) == (quarantined == 1)) out.push_back(b);
  return out;
}

// The cells, validated against the runner's catalog, asked from the first board that answers.
// Nothing is written anywhere (no database; the deploy is content-addressed and idempotent).
std::vector<k3bench::CellSpec> expand_on_farm(const k3farm::FarmConfig& cfg,
                                              const std::vector<std::string>& boards,
                                              const std::string& root, const FarmBenchRequest& rq,
                                              k3bench::MeasureSettings& settings,
                                              k3bench::ProcessPlan& plan) {
  k3farm::Farm probe_farm(cfg, root, nullptr, "", rq.transports);
  std::vector<std::string> why;
  for (const auto& name : boards) {
    auto& board = probe_farm.board(name);
    try {
      board.deploy(board.local_runner(root));
      const k3bench::Catalog catalog = k3bench::Catalog::from_target(*probe_farm.target(name));
      return k3bench::expand_grid(rq.bench.grid, catalog, root + "/configs/models", settings, plan,
                                  rq.bench.settings_given);
    } catch (const k3farm::BoardError& e) {
      why.push_back(e.what());
    } catch (const k3bench::UserError&) {
      throw;
    } catch (const std::runtime_error& e) {
      why.push_back(fmt::format("board {}: {}", name, e.what()));
    }
  }
  throw k3bench::UserError(fmt::format("no board of farm {} could list its runner's ops: {}",
                                       cfg.name, fmt::join(why, "; ")));
}

k3farm::FarmConfig loaded_farm(const FarmBenchRequest& rq, const std::string& root) {
  try {
    return k3farm::Farm::load(rq.farm, root);
  } catch (const std::runtime_error& e) {
    throw k3bench::UserError(e.what());
  }
}

// Refused before any board is touched: a shared queue with shards, more boards than the process
// may hold descriptors for, a board whose runner is not built.
void refuse_unrunnable(const k3farm::FarmConfig& cfg, const std::string& root,
                       const FarmBenchRequest& rq, const std::vector<std::string>& boards) {
  if (rq.shared_queue && rq.shard.count > 1)
    throw k3bench::UserError(
        "--shared-queue and --shard: a shared queue balances the jobs itself; give every job the "
        "same command without --shard");
  try {
    k3farm::require_descriptors_for(boards.size());
  } catch (const std::invalid_argument& e) {
    throw k3bench::UserError(e.what());
  }
  k3farm::Farm names(cfg, root, nullptr, "", rq.transports);
  for (const auto& b : boards) {
    const std::string runner = names.board(b).local_runner(root);
    if (!std::filesystem::exists(runner))
      throw k3bench::UserError(
          fmt::format("board {}: runner {} missing (k3tune build --variant {})", b, runner,
                      names.board(b).config().variant));
  }
}

k3bench::SweepOptions sweep_options(const FarmBenchRequest& rq, const k3bench::ProcessPlan& plan) {
  k3bench::SweepOptions opt;
  opt.rounds = k3bench::rounds_from_plan(plan, rq.bench.remeasure_disturbed);
  opt.timeout_s = rq.bench.timeout_s;
  opt.resume = rq.bench.resume;
  opt.progress = false;  // several boards at once: notes, not one progress line
  opt.stats.wide_ci_threshold = rq.bench.wide_ci;
  opt.command_line = rq.bench.command_line;
  return opt;
}

// --shared-queue: what identifies "the same command": the farm, the cells in canonical order and
// how they are measured (the boards each job takes may differ).
std::string shared_queue_key(const std::string& farm, const std::vector<k3bench::CellSpec>& all,
                             const k3bench::SweepOptions& opt) {
  std::string identity = farm;
  for (const auto& c : all)
    identity += "\n" + c.label() + " " + c.settings.to_json().dump() + " " + c.params.dump();
  identity += fmt::format("\nprocesses {}-{} ci {}", opt.rounds.min_processes,
                          opt.rounds.max_processes, opt.rounds.target_ci);
  return k3bench::sha256_text(identity);
}

// The chosen boards' runners as cell keys name them (boards share runners: each file hashed once).
std::vector<std::pair<std::unique_ptr<k3targets::Target>, std::string>> board_runners(
    k3farm::Farm& farm, const std::vector<std::string>& boards) {
  std::vector<std::pair<std::unique_ptr<k3targets::Target>, std::string>> out;
  std::map<std::string, std::string> hashes;  // runner file -> sha256
  for (const auto& b : boards) {
    auto t = farm.target(b);
    auto& hash = hashes[t->runner_path()];
    if (hash.empty()) hash = k3bench::sha256_file(t->runner_path());
    out.emplace_back(std::move(t), hash);
  }
  return out;
}

// This shard's cells queued, except with --resume those measured before on one of the chosen
// boards (same build, settings): they are skipped, not measured again.
void queue_cells(SweepContext& ctx, const std::vector<k3bench::CellSpec>& all) {
  FarmBenchOutcome& out = ctx.out;
  for (const auto p : shard_positions(all.size(), ctx.rq.shard)) {
    FarmCellResult c;
    c.index = p;
    c.spec = all[p];
    out.cells.push_back(std::move(c));
  }
  std::vector<std::pair<std::unique_ptr<k3targets::Target>, std::string>> board_keys;
  std::set<std::string> measured;  // cell keys with an ok aggregate (committed)
  if (ctx.rq.bench.resume) {
    board_keys = board_runners(ctx.farm, out.boards);
    measured = ctx.db.query([](auto& c) { return ok_aggregate_keys(c); });
  }
  for (std::size_t i = 0; i < out.cells.size(); ++i) {
    auto& c = out.cells[i];
    for (const auto& [t, hash] : board_keys) {
      const std::string key = k3bench::cell_key(*t, c.spec, hash);
      if (measured.count(key)) {
        c.status = CellStatus::kSkipped;
        c.reason = fmt::format("already measured on board {}", t->name());
        c.board = t->name();
        c.cell_key = key;
        ctx.cell_row(c, 0, c.board, "", key, "skipped", c.reason);
        break;
      }
    }
    if (c.status == CellStatus::kPending) ctx.queue.push(i);
  }
}

// Every board thread has stopped: the writer's last rows stored. A controller failure, then or
// earlier, ends the sweep: the leases are released (their rows go through the writer, which has
// dropped whatever depended on a lost row) and ControllerFailure is thrown.
void store_last_rows(SweepContext& ctx, std::optional<k3farm::Farm>& farm) {
  if (ctx.controller_failure.empty()) {
    try {
      ctx.db.flush();
    } catch (const k3store::StoreError& e) {
      ctx.controller_failure = fmt::format("storing the last rows: {}", e.what());
    }
  }
  if (ctx.controller_failure.empty()) return;
  ctx.db.clear_failure();
  farm.reset();
  throw k3farm::ControllerFailure(
      fmt::format("farm sweep {} stopped by a controller failure {} (no board quarantined for it; "
                  "committed samples kept; --resume measures the rest)",
                  ctx.out.sweep_uuid, ctx.controller_failure));
}

// The cells still queued when no board is left to take them: unmeasured. Under a shared queue
// their claims are dropped, so another controller may measure them.
void settle_left_cells(SweepContext& ctx) {
  for (const auto p : ctx.queue.left()) {
    auto& c = ctx.out.cells[p];
    if (!ctx.queue_key.empty())
      ctx.db.write([key = ctx.queue_key, i = static_cast<int>(c.index),
                    sweep = ctx.out.sweep_uuid](auto& conn) { drop_claim(conn, key, i, sweep); });
    c.status = CellStatus::kUnmeasured;
    c.reason = "no healthy board left in the run";
    ctx.cell_row(c, c.attempts + 1, "", "", "", "unmeasured", c.reason);
  }
}

}  // namespace

int FarmBenchOutcome::count(CellStatus status) const {
  int n = 0;
  for (const auto& c : cells) n += c.status == status;
  return n;
}

FarmBenchOutcome run_farm_bench(const std::string& root, const FarmBenchRequest& rq) {
  const auto start = Clock::now();
  if (!rq.bench.baseline_runner.empty() || !rq.bench.baseline_build.empty())
    throw k3bench::UserError(
        "--farm: A/B runs (--baseline-runner, --baseline-build) measure on one --target");
  const k3farm::FarmConfig cfg = loaded_farm(rq, root);
  FarmBenchOutcome out;
  out.farm_name = cfg.name;
  out.farm_source = cfg.source;
  out.boards = chosen_boards(cfg, rq);
  refuse_unrunnable(cfg, root, rq, out.boards);
  k3bench::MeasureSettings settings = rq.bench.settings;
  k3bench::ProcessPlan plan = rq.bench.plan;
  const auto all =
      expand_on_farm(cfg, standing_quarantines_last(out.boards, cfg.name, rq.bench.db_path), root,
                     rq, settings, plan);
  out.total_cells = all.size();
  const k3bench::SweepOptions opt = sweep_options(rq, plan);

  // Validated: from here on the database is written.
  // The one writer: every row of every board thread goes through it (database_writer.h).
  k3store::DatabaseWriter db(k3store::open_for_writing(rq.bench.db_path));
  out.samples_before = db.query([](auto& c) { return sample_count(c); });
  out.sweep_uuid = k3bench::new_uuid();
  std::optional<k3farm::Farm> farm;  // destroyed first: its leases are released through `db`
  farm.emplace(cfg, root, db, out.sweep_uuid, rq.transports);
  SweepContext ctx{root, rq, db, *farm, opt, out, {}, {}, {}};
  if (rq.shared_queue) ctx.queue_key = shared_queue_key(cfg.name, all, opt);
  queue_cells(ctx, all);
  {
    std::vector<std::thread> threads;
    for (const auto& b : out.boards) threads.emplace_back(BoardWorker(ctx, b));
    for (auto& t : threads) t.join();
  }
  store_last_rows(ctx, farm);
  settle_left_cells(ctx);
  out.quarantined = farm->quarantined_boards();
  farm.reset();  // leases released
  out.samples_after = db.query([](auto& c) { return sample_count(c); });
  out.writes = db.latency();
  out.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace k3farmbench
