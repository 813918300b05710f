#include "harness/host/farmbench/board_worker.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/host/bench/provenance.h"
#include "harness/host/farmbench/shared_queue.h"
#include "harness/host/store/database.h"
#include "harness/host/store/farm_sweeps.h"
#include "harness/host/store/results.h"

namespace k3farmbench {
namespace {

void note(const std::string& line) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  fmt::print(stderr, "k3tune: {}\n", line);
}

}  // namespace

void SweepContext::cell_row(const FarmCellResult& c, int attempt, const std::string& board,
                            const std::string& run, const std::string& key,
                            const std::string& outcome, const std::string& reason) {
  db.write([row = k3store::SweepCellRow{out.sweep_uuid, static_cast<int>(c.index), attempt, board,
                                        run, key, outcome, reason, rq.shard.text()}](auto& conn) {
    insert_sweep_cell(conn, row);
  });
}

void BoardWorker::operator()() {
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
bool BoardWorker::measure_on_board() {
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
bool BoardWorker::back_after_power() {
  if (ctx_.queue.done() || !ctx_.farm.quarantined(board_)) return false;
  executor_.reset();
  target_.reset();
  return ctx_.farm.power_recover(
      board_, [this] { return !ctx_.queue.done(); }, [](const std::string& line) { note(line); });
}

// Whether `e` comes from the board having been lost: BoardLost, or an error that followed a run
// the farm judged a board fault (e.g. the runner's facts cut off when ssh dropped).
bool BoardWorker::board_lost(const std::exception& e) const {
  return dynamic_cast<const k3targets::TargetLost*>(&e) != nullptr ||
         (target_ && !target_->lost().empty());
}

// Lease, deploy + probe, and the board's runner as a build row. False: the board takes no cells.
bool BoardWorker::take_board() {
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

void BoardWorker::row(std::size_t p, const std::string& run, const std::string& key,
                      const std::string& outcome, const std::string& reason) {
  const auto& c = ctx_.out.cells[p];
  ctx_.cell_row(c, c.attempts, board_, run, key, outcome, reason);
}

// With a shared queue: the cells of `taken` this controller may measure (claimed in the
// database); the others are another controller's and end here as skipped. Returns the claimed.
std::vector<std::size_t> BoardWorker::claimed(const std::vector<std::size_t>& taken) {
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
bool BoardWorker::measure_batch() {
  const auto taken = ctx_.queue.take(ctx_.rq.cells_per_probe);
  if (taken.empty()) return false;
  const auto batch = claimed(taken);
  if (batch.empty()) {
    ctx_.queue.finish({});
    return true;
  }
  const std::vector<k3bench::CellSpec> specs = handed_out(batch);
  k3bench::SweepOptions opt = ctx_.options;
  opt.run_uuid = k3bench::new_uuid();
  opt.executor = executor_.get();
  Returned back;  // cells to measure again elsewhere (or here)
  bool leave = false;
  try {
    const k3bench::SweepReport rep = run_sweep(ctx_.db, {{target_.get(), hash_, ""}}, specs, opt);
    leave = settle_batch(batch, rep, back);
  } catch (const std::exception& e) {
    if (!board_lost(e)) {
      stop_run(e, opt.run_uuid);
      return false;
    }
    settle_lost_batch(batch, specs, opt.run_uuid, e.what(), back);
    leave = true;
  }
  requeue(back);
  return !leave;
}

// The batch's cells, each counted as handed out once more.
std::vector<k3bench::CellSpec> BoardWorker::handed_out(const std::vector<std::size_t>& batch) {
  std::vector<k3bench::CellSpec> specs;
  std::lock_guard lock(ctx_.queue.mu());
  for (auto p : batch) {
    ++ctx_.out.cells[p].attempts;
    specs.push_back(ctx_.out.cells[p].spec);
  }
  return specs;
}

// The batch measured, the board is probed again: a board that rebooted, throttled or failed its
// probe since has the batch's processes marked disturbed and its cells measured again (`back`);
// else the cells are settled. True: the board leaves the run (quarantined).
bool BoardWorker::settle_batch(const std::vector<std::size_t>& batch,
                               const k3bench::SweepReport& rep, Returned& back) {
  const k3farm::HealthChange h = ctx_.farm.recheck(board_);
  std::lock_guard lock(ctx_.queue.mu());
  ctx_.out.runs.emplace_back(board_, rep.run_uuid);
  ctx_.out.processes_run += rep.processes_run;
  ctx_.out.processes_failed += rep.processes_failed;
  if (h.clean() && !ctx_.farm.quarantined(board_)) {
    for (std::size_t i = 0; i < batch.size(); ++i) settle(batch[i], rep.run_uuid, rep.cells[i]);
    return false;
  }
  const std::string why = fmt::format("board {} {} between probes: {}", board_,
                                      h.rebooted    ? "rebooted"
                                      : h.throttled ? "throttled"
                                                    : "failed its probe",
                                      fmt::join(h.reasons, "; "));
  const int marked =
      ctx_.db.query([&](auto& db) { return mark_run_disturbed(db, rep.run_uuid, why); });
  note(fmt::format("{}; {} processes of run {} marked disturbed, {} cells measured again", why,
                   marked, rep.run_uuid, batch.size()));
  for (std::size_t i = 0; i < batch.size(); ++i) {
    row(batch[i], rep.run_uuid, rep.cells[i].cell_key, "disturbed", why);
    back.emplace_back(batch[i], why);
  }
  return ctx_.farm.quarantined(board_);
}

// The controller failed (database busy, no descriptors, a bug), not the board: the run stops;
// the batch's run is marked interrupted when the database still takes a write.
void BoardWorker::stop_run(const std::exception& e, const std::string& run) {
  ctx_.fail(fmt::format("while board {} measured: {}", board_, e.what()));
  try {
    ctx_.db.write([run](auto& db) { k3store::mark_interrupted(db, run); });
  } catch (const std::exception&) {
  }
}

// The board was lost mid-batch (the farm judged a board fault and quarantined it): the board
// leaves the run; cells it finished stay, the others go back to the queue (`back`).
void BoardWorker::settle_lost_batch(const std::vector<std::size_t>& batch,
                                    const std::vector<k3bench::CellSpec>& specs,
                                    const std::string& run, const std::string& why,
                                    Returned& back) {
  ctx_.db.write([run](auto& db) { k3store::mark_interrupted(db, run); });
  std::lock_guard lock(ctx_.queue.mu());
  ctx_.out.runs.emplace_back(board_, run);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const std::string key = k3bench::cell_key(*target_, specs[i], hash_);
    // Its aggregate is committed (the query waits for that): the cell stays measured here.
    if (ctx_.db.query([&](auto& db) { return run_measured_cell(db, run, key); })) {
      auto& c = ctx_.out.cells[batch[i]];
      c.status = CellStatus::kMeasured;
      c.board = board_;
      c.run_uuid = run;
      c.cell_key = key;
      row(batch[i], run, key, "measured", "");
      if (!ctx_.queue_key.empty()) finish(c.index);
      continue;
    }
    row(batch[i], run, key, "moved", why);
    back.emplace_back(batch[i], why);
  }
  note(fmt::format("{}: {} unfinished cells go back to the queue", why, back.size()));
}

// The returned cells go back to the queue, each until it has been handed out max_attempts times.
void BoardWorker::requeue(const Returned& back) {
  std::vector<std::size_t> again;
  {
    std::lock_guard lock(ctx_.queue.mu());
    for (const auto& [p, why] : back) {
      auto& c = ctx_.out.cells[p];
      c.history.push_back(fmt::format("{}: {}", board_, why));
      if (c.attempts >= ctx_.rq.max_attempts) {
        c.status = CellStatus::kFailed;
        c.reason = fmt::format("handed out {} times; last: {}", c.attempts, why);
      } else {
        again.push_back(p);
      }
    }
  }
  ctx_.queue.finish(again);
}

// Caller holds the queue's lock.
void BoardWorker::settle(std::size_t p, const std::string& run, const k3bench::CellOutcome& o) {
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
void BoardWorker::finish(std::size_t index) {
  ctx_.db.write([key = ctx_.queue_key, i = static_cast<int>(index),
                 sweep = ctx_.out.sweep_uuid](auto& db) { finish_claim(db, key, i, sweep); });
}

}  // namespace k3farmbench
