#include "harness/host/farmbench/farm_sweep.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "harness/host/bench/catalog.h"
#include "harness/host/bench/provenance.h"
#include "harness/host/bench/user_error.h"
#include "harness/host/farm/open_files.h"
#include "harness/host/farmbench/board_target.h"
#include "harness/host/farmbench/shared_queue.h"
#include "harness/host/store/database.h"
#include "harness/host/store/database_writer.h"
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

// The queue of cells (positions into the outcome's cells) shared by the board threads. A thread
// waits while the queue is empty but another board still measures a batch that may come back.
class CellQueue {
 public:
  void push(std::size_t p) { queue_.push_back(p); }
  std::vector<std::size_t> take(int n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return aborted_ || !queue_.empty() || in_flight_ == 0; });
    std::vector<std::size_t> batch;
    if (aborted_) return batch;
    while (!queue_.empty() && static_cast<int>(batch.size()) < n) {
      batch.push_back(queue_.front());
      queue_.pop_front();
    }
    if (!batch.empty()) ++in_flight_;
    return batch;
  }
  void finish(const std::vector<std::size_t>& back) {
    {
      std::lock_guard lock(mu_);
      for (auto p : back) queue_.push_back(p);
      --in_flight_;
    }
    cv_.notify_all();
  }
  std::vector<std::size_t> left() const { return {queue_.begin(), queue_.end()}; }
  std::mutex& mu() { return mu_; }
  // Nothing left to hand out, now or later (no batch in flight may come back), or aborted.
  bool done() {
    std::lock_guard lock(mu_);
    return aborted_ || (queue_.empty() && in_flight_ == 0);
  }
  // The run ends: every take() returns nothing from now on.
  void abort() {
    {
      std::lock_guard lock(mu_);
      aborted_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::size_t> queue_;
  int in_flight_ = 0;
  bool aborted_ = false;
};

struct SweepContext {
  const std::string& root;
  const FarmBenchRequest& rq;
  k3store::DatabaseWriter& db;  // the one writer every board thread hands its rows to
  k3farm::Farm& farm;
  k3bench::SweepOptions options;
  FarmBenchOutcome& out;
  CellQueue queue;
  std::string queue_key;           // --shared-queue: the claims' key ("" : not shared)
  std::string controller_failure;  // the first one; set: the run ends, no board is blamed

  // A failure of this controller (database, descriptors, k3tune's own code): the run stops.
  void fail(const std::string& why) {
    {
      std::lock_guard lock(queue.mu());
      if (controller_failure.empty()) controller_failure = why;
    }
    queue.abort();
  }
};

void note(const std::string& line) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  fmt::print(stderr, "k3tune: {}\n", line);
}

class BoardWorker {
 public:
  BoardWorker(SweepContext& ctx, std::string board) : ctx_(ctx), board_(std::move(board)) {}

  void operator()() {
    // A board quarantined as unreachable or hung comes back when a power cycle through its PDU
    // outlet cures it (power_recovery.h) while the run still has cells: it measures again.
    while (measure_on_board()) {
      try {
        if (!back_after_power()) return;
      } catch (const std::exception& e) {
        ctx_.fail(fmt::format("while board {} was power-cycled: {}", board_, e.what()));
        return;
      }
    }
  }

  // False: the run stops (a controller failure), or nothing is left for the board.
  bool measure_on_board() {
    try {
      if (!take_board()) return true;
      while (measure_batch()) {
      }
    } catch (const std::exception& e) {
      // Board faults are judged where they happen (lease, prepare, judge, recheck) and quarantine
      // the board; anything else is the controller's own failure: the run stops, no board blamed.
      if (!board_lost(e)) {
        ctx_.fail(fmt::format("while board {} measured: {}", board_, e.what()));
        return false;
      }
      note(fmt::format("board {} taken out of the run: {}", board_, e.what()));
    }
    return true;
  }

  // The board is out of the run and cells are left: a power cycle may bring it back.
  bool back_after_power() {
    if (ctx_.queue.done() || !ctx_.farm.quarantined(board_)) return false;
    executor_.reset();
    target_.reset();
    return ctx_.farm.power_recover(
        board_, [this] { return !ctx_.queue.done(); }, [](const std::string& line) { note(line); });
  }

  // Whether `e` comes from the board having been lost: BoardLost, or an error that followed a run
  // the farm judged a board fault (e.g. the runner's facts cut off when ssh dropped).
  bool board_lost(const std::exception& e) const {
    return dynamic_cast<const k3targets::TargetLost*>(&e) != nullptr ||
           (target_ && !target_->lost().empty());
  }

 private:
  // Lease, deploy + probe, and the board's runner as a build row. False: the board takes no cells.
  bool take_board() {
    try {
      // Held by another controller: wait for it while this run still has cells to hand out.
      k3farm::LeaseWait wait;
      wait.max_s = ctx_.rq.lease_wait_s;
      wait.keep_waiting = [this] { return !ctx_.queue.done(); };
      wait.on_waiting = [](const std::string& why) { note(why); };
      ctx_.farm.lease(board_, wait);
    } catch (const k3farm::LeaseError& e) {
      std::lock_guard lock(ctx_.queue.mu());
      ctx_.out.unused[board_] = e.what();
      note(fmt::format("board {} not used: {}", board_, e.what()));
      return false;
    } catch (const k3farm::BoardError& e) {
      note(fmt::format("board {} quarantined: {}", board_, e.what()));
      return false;
    }
    if (!ctx_.farm.prepare(board_)) {
      note(fmt::format("board {} quarantined: {}", board_,
                       ctx_.farm.quarantined_boards()[board_].reason));
      return false;
    }
    {
      std::lock_guard lock(ctx_.queue.mu());
      ctx_.out.unused.erase(board_);  // back after a power cycle
    }
    target_ = std::make_unique<JudgedBoardTarget>(ctx_.farm, board_, ctx_.root);
    hash_ = k3bench::sha256_file(target_->runner_path());
    if (!ctx_.db.query([&](auto& c) { return k3store::find_build(c, hash_).has_value(); })) {
      const auto build = k3bench::build_from_runner(*target_, hash_);
      ctx_.db.write([build](auto& c) {
        if (!k3store::find_build(c, build.build_hash)) k3store::upsert_build(c, build);
      });
    }
    executor_ = std::make_unique<FarmExecutor>(*target_);
    return true;
  }

  void row(std::size_t p, const std::string& run, const std::string& key,
           const std::string& outcome, const std::string& reason) {
    const auto& c = ctx_.out.cells[p];
    ctx_.db.write([row = k3store::SweepCellRow{ctx_.out.sweep_uuid, static_cast<int>(c.index),
                                               c.attempts, board_, run, key, outcome, reason,
                                               ctx_.rq.shard.text()}](auto& db) {
      insert_sweep_cell(db, row);
    });
  }

  // With a shared queue: the cells of `taken` this controller may measure (claimed in the
  // database); the others are another controller's and end here as skipped. Returns the claimed.
  std::vector<std::size_t> claimed(const std::vector<std::size_t>& taken) {
    if (ctx_.queue_key.empty()) return taken;
    std::vector<std::size_t> mine;
    for (auto p : taken) {
      auto& c = ctx_.out.cells[p];
      std::string holder;
      if (ctx_.db.query([&](auto& db) {
            return claim_cell(db, ctx_.queue_key, static_cast<int>(c.index), ctx_.out.sweep_uuid,
                              &holder);
          })) {
        mine.push_back(p);
        continue;
      }
      std::lock_guard lock(ctx_.queue.mu());
      c.status = CellStatus::kSkipped;
      c.reason = "shared queue: " + holder;
      row(p, "", "", "skipped", c.reason);
    }
    return mine;
  }

  // One batch on this board. False: the board leaves the run (or the queue is done).
  bool measure_batch() {
    const auto taken = ctx_.queue.take(ctx_.rq.cells_per_probe);
    if (taken.empty()) return false;
    const auto batch = claimed(taken);
    if (batch.empty()) {
      ctx_.queue.finish({});
      return true;
    }
    std::vector<k3bench::CellSpec> specs;
    {
      std::lock_guard lock(ctx_.queue.mu());
      for (auto p : batch) {
        ++ctx_.out.cells[p].attempts;
        specs.push_back(ctx_.out.cells[p].spec);
      }
    }
    k3bench::SweepOptions opt = ctx_.options;
    opt.run_uuid = k3bench::new_uuid();
    opt.executor = executor_.get();
    std::vector<std::size_t> back;  // cells to measure again elsewhere (or here)
    std::vector<std::string> back_reason;
    bool leave = false;
    try {
      const k3bench::SweepReport rep = run_sweep(ctx_.db, {{target_.get(), hash_, ""}}, specs, opt);
      const k3farm::HealthChange h = ctx_.farm.recheck(board_);
      std::lock_guard lock(ctx_.queue.mu());
      ctx_.out.runs.emplace_back(board_, rep.run_uuid);
      ctx_.out.processes_run += rep.processes_run;
      ctx_.out.processes_failed += rep.processes_failed;
      if (!h.clean() || ctx_.farm.quarantined(board_)) {
        const std::string why = fmt::format("board {} {} between probes: {}", board_,
                                            h.rebooted    ? "rebooted"
                                            : h.throttled ? "throttled"
                                                          : "failed its probe",
                                            fmt::join(h.reasons, "; "));
        const int marked =
            ctx_.db.query([&](auto& db) { return mark_run_disturbed(db, rep.run_uuid, why); });
        note(fmt::format("{}; {} processes of run {} marked disturbed, {} cells measured again",
                         why, marked, rep.run_uuid, batch.size()));
        for (std::size_t i = 0; i < batch.size(); ++i) {
          row(batch[i], rep.run_uuid, rep.cells[i].cell_key, "disturbed", why);
          back.push_back(batch[i]);
          back_reason.push_back(why);
        }
        leave = ctx_.farm.quarantined(board_);
      } else {
        for (std::size_t i = 0; i < batch.size(); ++i) settle(batch[i], rep.run_uuid, rep.cells[i]);
      }
    } catch (const std::exception& e) {
      if (!board_lost(e)) {
        // The controller failed (database busy, no descriptors, a bug), not the board: the run
        // stops; this batch's run is marked interrupted when the database still takes a write.
        ctx_.fail(fmt::format("while board {} measured: {}", board_, e.what()));
        try {
          ctx_.db.write([run = opt.run_uuid](auto& db) { k3store::mark_interrupted(db, run); });
        } catch (const std::exception&) {
        }
        return false;
      }
      // The board was lost mid-batch (the farm judged a board fault and quarantined it): the
      // board leaves the run; cells it finished stay, the others go back to the queue.
      const std::string why = e.what();
      ctx_.db.write([run = opt.run_uuid](auto& db) { k3store::mark_interrupted(db, run); });
      std::lock_guard lock(ctx_.queue.mu());
      ctx_.out.runs.emplace_back(board_, opt.run_uuid);
      for (std::size_t i = 0; i < batch.size(); ++i) {
        const std::string key = k3bench::cell_key(*target_, specs[i], hash_);
        // Its aggregate is committed (the query waits for that): the cell stays measured here.
        if (ctx_.db.query([&](auto& db) { return run_measured_cell(db, opt.run_uuid, key); })) {
          auto& c = ctx_.out.cells[batch[i]];
          c.status = CellStatus::kMeasured;
          c.board = board_;
          c.run_uuid = opt.run_uuid;
          c.cell_key = key;
          row(batch[i], opt.run_uuid, key, "measured", "");
          if (!ctx_.queue_key.empty()) finish(c.index);
          continue;
        }
        row(batch[i], opt.run_uuid, key, "moved", why);
        back.push_back(batch[i]);
        back_reason.push_back(why);
      }
      note(fmt::format("{}: {} unfinished cells go back to the queue", why, back.size()));
      leave = true;
    }
    std::vector<std::size_t> requeue;
    {
      std::lock_guard lock(ctx_.queue.mu());
      for (std::size_t i = 0; i < back.size(); ++i) {
        auto& c = ctx_.out.cells[back[i]];
        c.history.push_back(fmt::format("{}: {}", board_, back_reason[i]));
        if (c.attempts >= ctx_.rq.max_attempts) {
          c.status = CellStatus::kFailed;
          c.reason = fmt::format("handed out {} times; last: {}", c.attempts, back_reason[i]);
        } else {
          requeue.push_back(back[i]);
        }
      }
    }
    ctx_.queue.finish(requeue);
    return !leave;
  }

  // Caller holds the queue's lock.
  void settle(std::size_t p, const std::string& run, const k3bench::CellOutcome& o) {
    auto& c = ctx_.out.cells[p];
    c.board = board_;
    c.run_uuid = run;
    c.cell_key = o.cell_key;
    if (!o.skipped.empty()) {
      c.status = CellStatus::kSkipped;
      c.reason = o.skipped;
    } else {
      c.has_aggregate = o.has_aggregate;
      c.aggregate = o.aggregate;
      c.status = o.has_aggregate && o.aggregate.ok ? CellStatus::kMeasured : CellStatus::kFailed;
      c.reason = o.aggregate.reason;
    }
    // Written after the cell's samples and aggregate, so committed after (or with) them: a cell
    // the database says is done has its figures committed (database_writer.h).
    row(p, run, o.cell_key, to_string(c.status), c.reason);
    if (!ctx_.queue_key.empty()) finish(c.index);
  }

  // The shared queue's claim on the cell: done.
  void finish(std::size_t index) {
    ctx_.db.write([key = ctx_.queue_key, i = static_cast<int>(index),
                   sweep = ctx_.out.sweep_uuid](auto& db) { finish_claim(db, key, i, sweep); });
  }

  SweepContext& ctx_;
  std::string board_;
  std::unique_ptr<JudgedBoardTarget> target_;
  std::unique_ptr<FarmExecutor> executor_;
  std::string hash_;
};

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
  k3farm::FarmConfig cfg;
  try {
    cfg = k3farm::Farm::load(rq.farm, root);
  } catch (const std::runtime_error& e) {
    throw k3bench::UserError(e.what());
  }
  FarmBenchOutcome out;
  out.farm_name = cfg.name;
  out.farm_source = cfg.source;
  out.boards = chosen_boards(cfg, rq);
  if (rq.shared_queue && rq.shard.count > 1)
    throw k3bench::UserError(
        "--shared-queue and --shard: a shared queue balances the jobs itself; give every job the "
        "same command without --shard");
  try {
    k3farm::require_descriptors_for(out.boards.size());
  } catch (const std::invalid_argument& e) {
    throw k3bench::UserError(e.what());
  }
  {
    k3farm::Farm names(cfg, root, nullptr, "", rq.transports);
    for (const auto& b : out.boards) {
      const std::string runner = names.board(b).local_runner(root);
      if (!std::filesystem::exists(runner))
        throw k3bench::UserError(
            fmt::format("board {}: runner {} missing (k3tune build --variant {})", b, runner,
                        names.board(b).config().variant));
    }
  }
  k3bench::MeasureSettings settings = rq.bench.settings;
  k3bench::ProcessPlan plan = rq.bench.plan;
  const auto all =
      expand_on_farm(cfg, standing_quarantines_last(out.boards, cfg.name, rq.bench.db_path), root,
                     rq, settings, plan);
  out.total_cells = all.size();
  k3bench::SweepOptions opt;
  opt.rounds = k3bench::rounds_from_plan(plan, rq.bench.remeasure_disturbed);
  opt.timeout_s = rq.bench.timeout_s;
  opt.resume = rq.bench.resume;
  opt.progress = false;  // several boards at once: notes, not one progress line
  opt.stats.wide_ci_threshold = rq.bench.wide_ci;
  opt.command_line = rq.bench.command_line;

  // Validated: from here on the database is written.
  // The one writer: every row of every board thread goes through it (database_writer.h).
  k3store::DatabaseWriter db(k3store::open_for_writing(rq.bench.db_path));
  out.samples_before = db.query([](auto& c) { return sample_count(c); });
  out.sweep_uuid = k3bench::new_uuid();
  std::optional<k3farm::Farm> farm;  // destroyed first: its leases are released through `db`
  farm.emplace(cfg, root, db, out.sweep_uuid, rq.transports);
  SweepContext ctx{root, rq, db, *farm, opt, out, {}, {}, {}};
  if (rq.shared_queue) {
    // What identifies "the same command": the farm, the cells in canonical order and how they are
    // measured (the boards each job takes may differ).
    std::string identity = cfg.name;
    for (const auto& c : all)
      identity += "\n" + c.label() + " " + c.settings.to_json().dump() + " " + c.params.dump();
    identity += fmt::format("\nprocesses {}-{} ci {}", opt.rounds.min_processes,
                            opt.rounds.max_processes, opt.rounds.target_ci);
    ctx.queue_key = k3bench::sha256_text(identity);
  }
  for (const auto p : shard_positions(all.size(), rq.shard)) {
    FarmCellResult c;
    c.index = p;
    c.spec = all[p];
    out.cells.push_back(std::move(c));
  }
  std::vector<std::pair<std::unique_ptr<k3targets::Target>, std::string>> board_keys;
  std::set<std::string> measured;  // cell keys with an ok aggregate (committed)
  if (rq.bench.resume) {
    std::map<std::string, std::string> hashes;  // runner file -> sha256 (boards share runners)
    for (const auto& b : out.boards) {
      auto t = farm->target(b);
      auto& hash = hashes[t->runner_path()];
      if (hash.empty()) hash = k3bench::sha256_file(t->runner_path());
      board_keys.emplace_back(std::move(t), hash);
    }
    measured = db.query([](auto& c) { return ok_aggregate_keys(c); });
  }
  for (std::size_t i = 0; i < out.cells.size(); ++i) {
    auto& c = out.cells[i];
    if (rq.bench.resume) {
      // Measured before on one of these boards (same build, settings): not again.
      for (const auto& [t, hash] : board_keys) {
        const std::string& b = t->name();
        const std::string key = k3bench::cell_key(*t, c.spec, hash);
        if (measured.count(key)) {
          c.status = CellStatus::kSkipped;
          c.reason = fmt::format("already measured on board {}", b);
          c.board = b;
          c.cell_key = key;
          db.write([row = k3store::SweepCellRow{out.sweep_uuid, static_cast<int>(c.index), 0, b, "",
                                                key, "skipped", c.reason, rq.shard.text()}](
                       auto& conn) { insert_sweep_cell(conn, row); });
          break;
        }
      }
    }
    if (c.status == CellStatus::kPending) ctx.queue.push(i);
  }
  {
    std::vector<std::thread> threads;
    for (const auto& b : out.boards) threads.emplace_back(BoardWorker(ctx, b));
    for (auto& t : threads) t.join();
  }
  if (ctx.controller_failure.empty()) {
    try {
      db.flush();
    } catch (const k3store::StoreError& e) {
      ctx.controller_failure = fmt::format("storing the last rows: {}", e.what());
    }
  }
  if (!ctx.controller_failure.empty()) {
    // Every board thread has stopped: nothing that depends on a lost row is written from here on,
    // and the leases can be released (their rows go through the writer).
    db.clear_failure();
    farm.reset();
    throw k3farm::ControllerFailure(fmt::format(
        "farm sweep {} stopped by a controller failure {} (no board quarantined for it; "
        "committed samples kept; --resume measures the rest)",
        out.sweep_uuid, ctx.controller_failure));
  }
  for (const auto p : ctx.queue.left()) {
    auto& c = out.cells[p];
    if (!ctx.queue_key.empty())  // another controller of the shared queue may measure it
      db.write([key = ctx.queue_key, i = static_cast<int>(c.index),
                sweep = out.sweep_uuid](auto& conn) { drop_claim(conn, key, i, sweep); });
    c.status = CellStatus::kUnmeasured;
    c.reason = "no healthy board left in the run";
    db.write([row = k3store::SweepCellRow{out.sweep_uuid, static_cast<int>(c.index), c.attempts + 1,
                                          "", "", "", "unmeasured", c.reason, rq.shard.text()}](
                 auto& conn) { insert_sweep_cell(conn, row); });
  }
  out.quarantined = farm->quarantined_boards();
  farm.reset();  // leases released
  out.samples_after = db.query([](auto& c) { return sample_count(c); });
  out.writes = db.latency();
  out.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace k3farmbench
