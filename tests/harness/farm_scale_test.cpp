// The farm at scale, on fake boards (label farm-scale): the board transport is an in-process test
// double (fake_board.h: no SSH, no processes, scripted latency and faults); everything else is the
// real `bench --farm` -- the scheduler and its queue, leases, health probes and quarantine, the
// shared queue between controllers, and the one database writer -- on a real SQLite file.
//   - 200 boards, 3000 cells, four faulted boards (one dies mid-run, one hangs until its runs time
//     out, one reboots between probes, one is dead from the start): every cell is measured exactly
//     once (one ok aggregate per cell in the database), the faulted boards are quarantined and
//     their cells moved; wall time, peak open descriptors and the writer's latency are printed;
//   - a controller killed with SIGKILL mid-run: every cell the database says is done has its
//     figures committed, and --resume measures exactly the cells that were not committed;
//   - two controllers on overlapping fake boards sharing one database and queue: every cell once,
//     both measuring.
// K3_TEST_SIZE=reduced (CI) runs 50 boards and 600 cells instead of 200 and 3000.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "fake_board.h"
#include "farm_test_support.h"
#include "harness/host/farm/open_files.h"
#include "harness/host/farmbench/farm_sweep.h"
#include "harness/host/store/database.h"

namespace {

using namespace k3farm_test;
using Clock = std::chrono::steady_clock;

bool reduced() {
  const char* size = std::getenv("K3_TEST_SIZE");
  return size != nullptr && std::string(size) == "reduced";
}

std::string runner_output(const std::vector<std::string>& args) {
  std::vector<std::string> argv{K3BENCH_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto r = k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(60));
  if (!r.ok()) throw std::runtime_error("k3bench " + args.front() + ": " + r.err);
  return r.out;
}

// The highest count of this process's open descriptors while it runs.
class DescriptorPeak {
 public:
  DescriptorPeak()
      : thread_([this] {
          while (!stop_) {
            peak_ = std::max(peak_.load(), k3farm::open_descriptors());
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
          }
        }) {}
  ~DescriptorPeak() { stop(); }
  std::size_t stop() {
    if (!stop_.exchange(true)) thread_.join();
    return peak_;
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> peak_{0};
  std::thread thread_;
};

class FarmScale : public ::testing::Test {
 protected:
  void SetUp() override {
    // The runner's own answers, captured once from the real host k3bench: the fake boards
    // describe themselves and list their ops exactly as it does.
    list_ops_ = runner_output({"--list-ops", "--json"});
    facts_ = runner_output({"--facts", "--json"});
    // What the farm deploys (by hash) to the fake boards; they never execute it.
    write_file(tmp_ / "runner",
               "#!/bin/sh\n# a runner deployed to fake boards, never run\nexit 2\n");
    fs::permissions(tmp_ / "runner", fs::perms::owner_all);
  }

  // A farm file of `boards` local-kind boards f1..fN (the transport factory makes them fake);
  // `extra` is appended to a board's table by name.
  std::string farm_file(int boards, const std::map<std::string, std::string>& extra = {}) {
    std::string text = fmt::format(
        "[farm]\nname = \"fake-lab\"\nmax_timeouts = 2\n[defaults]\nkind = \"local\"\n"
        "runner = \"{}\"\nvariant = \"host\"\ntimeout_s = 120\n",
        tmp_ / "runner");
    for (int i = 1; i <= boards; ++i) {
      const std::string name = fmt::format("f{}", i);
      text += fmt::format("[boards.{}]\nwork_dir = \"{}\"\n", name, tmp_ / name);
      if (extra.count(name)) text += extra.at(name) + "\n";
    }
    const std::string path = tmp_ / "farm.toml";
    write_file(path, text);
    return path;
  }

  // `cells` cells of linear_decode: three shapes x workers 1..W x tile_n in steps of 16.
  k3farmbench::FarmBenchRequest request(const std::string& farm, const std::string& db, int cells,
                                        FakeLab& lab) {
    k3farmbench::FarmBenchRequest rq;
    rq.farm = farm;
    rq.transports = lab.transports();
    rq.cells_per_probe = 8;
    rq.lease_wait_s = 60;
    auto& b = rq.bench;
    b.db_path = db;
    b.grid.ops = {"linear_decode"};
    b.grid.shapes = {"n=64,k=128", "n=96,k=256", "n=128,k=256"};
    const int tiles = 50, workers = cells / (3 * tiles);
    std::string w = "workers=1", t = "tile_n=16";
    for (int i = 2; i <= workers; ++i) w += fmt::format(",{}", i);
    for (int i = 2; i <= tiles; ++i) t += fmt::format(",{}", 16 * i);
    b.grid.grid = {w, t};
    b.settings.repetitions = 3;
    b.settings.min_time_s = 0.002;
    b.plan.processes = 2;
    b.plan.target_ci = 0;
    b.progress = false;
    b.command_line = "farm-scale test";
    return rq;
  }

  static std::int64_t count(const std::string& db, const std::string& sql) {
    return k3store::open_database(db, k3store::OpenMode::kReadOnly)->scalar_int(sql);
  }

  // Ok aggregates per cell (op, shape, params: the cell whatever board measured it).
  static std::map<std::string, int> ok_per_cell(const std::string& db) {
    auto c = k3store::open_database(db, k3store::OpenMode::kReadOnly);
    auto s = c->prepare(
        "SELECT c.op || ' ' || c.shape_json || ' ' || c.params_json, count(*) FROM aggregates a "
        "JOIN cells c USING (cell_key) WHERE a.status = 'ok' GROUP BY 1");
    std::map<std::string, int> out;
    while (s.step()) out[s.text(0)] = static_cast<int>(s.integer(1));
    return out;
  }

  static void expect_each_once(const std::map<std::string, int>& per_cell, std::size_t cells) {
    EXPECT_EQ(per_cell.size(), cells);
    int twice = 0;
    for (const auto& [cell, n] : per_cell) twice += n != 1;
    EXPECT_EQ(twice, 0) << "cells with more than one ok aggregate";
  }

  TempDir tmp_;
  std::string list_ops_, facts_;
};

TEST_F(FarmScale, TwoHundredFakeBoardsMeasureEveryCellExactlyOnce) {
  const int boards = reduced() ? 50 : 200, cells = reduced() ? 600 : 3000;
  FakeLab lab(list_ops_, facts_);
  for (int i = 1; i <= boards; ++i) {
    FakeBoardScript s;
    s.cell_latency_s = 0.005 + 0.001 * (i % 16);  // boards of different speeds
    lab.script(fmt::format("f{}", i), s);
  }
  FakeBoardScript dies, hangs, reboots, dead;
  dies.dies_after_runs = 5;
  hangs.runner_hangs = true;
  reboots.reboots_after_runs = 3;
  dead.dies_after_runs = 0;
  lab.script("f7", dies);
  lab.script("f13", hangs);
  lab.script("f21", reboots);
  lab.script("f40", dead);
  const std::string db = tmp_ / "results.db";
  auto rq = request(farm_file(boards, {{"f13", "timeout_s = 0.3"}}), db, cells, lab);

  DescriptorPeak fds;
  const auto start = Clock::now();
  const auto out = k3farmbench::run_farm_bench(K3TUNE_ROOT, rq);
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  const std::size_t peak_fds = fds.stop();

  ASSERT_EQ(out.total_cells, static_cast<std::size_t>(cells));
  EXPECT_EQ(out.count(k3farmbench::CellStatus::kMeasured), cells);
  EXPECT_EQ(out.count(k3farmbench::CellStatus::kUnmeasured), 0);
  EXPECT_EQ(out.count(k3farmbench::CellStatus::kFailed), 0);
  expect_each_once(ok_per_cell(db), static_cast<std::size_t>(cells));
  EXPECT_EQ(count(db,
                  "SELECT count(DISTINCT cell_index) FROM farm_sweep_cells WHERE outcome = "
                  "'measured'"),
            cells);
  EXPECT_EQ(count(db, "SELECT count(*) FROM farm_leases"), 0);  // every lease released

  // The faulted boards, and only they, are out; the cells they had in hand moved elsewhere.
  const std::map<std::string, k3farm::Fault> faulted{{"f7", k3farm::Fault::kUnreachable},
                                                     {"f13", k3farm::Fault::kRepeatedTimeouts},
                                                     {"f21", k3farm::Fault::kRebooted},
                                                     {"f40", k3farm::Fault::kUnreachable}};
  ASSERT_EQ(out.quarantined.size(), faulted.size());
  for (const auto& [board, fault] : faulted) {
    ASSERT_TRUE(out.quarantined.count(board)) << board;
    EXPECT_EQ(out.quarantined.at(board).fault, fault) << out.quarantined.at(board).reason;
  }
  EXPECT_EQ(count(db, "SELECT count(*) FROM farm_board_events WHERE event = 'quarantined'"), 4);
  int moved = 0;
  for (const auto& c : out.cells) {
    moved += !c.history.empty();
    if (!c.history.empty()) {
      EXPECT_FALSE(faulted.count(c.board)) << c.board;
    }
  }
  EXPECT_GT(moved, 0);
  EXPECT_EQ(count(db,
                  "SELECT count(*) FROM farm_sweep_cells WHERE outcome IN ('moved', "
                  "'disturbed')"),
            moved);
  // One connection for 200 boards: a connection per board thread would hold ~3 descriptors each.
  EXPECT_LT(peak_fds, 64u);

  std::printf(
      "fake farm: %d boards, %d cells (%d moved off %zu faulted boards), %d runner processes, "
      "%lld samples; wall %.1f s; peak open descriptors %zu\n  database writer: %s\n",
      boards, cells, moved, faulted.size(), out.processes_run,
      static_cast<long long>(out.samples_after), wall, peak_fds, out.writes.summary().c_str());
}

// The controller (a forked copy of this process) is killed with SIGKILL once about a third of the
// cells are done. What the database says is done has its figures; --resume (after `farm release
// --stale` of the dead controller's leases) measures exactly the cells that were not committed.
TEST_F(FarmScale, AKilledControllerLosesNothingCommittedAndResumeMeasuresTheRest) {
  const int boards = 40, cells = 600;
  const std::string db = tmp_ / "results.db";
  const std::string farm = farm_file(boards);
  FakeBoardScript slow;
  slow.cell_latency_s = 0.03;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    FakeLab lab(list_ops_, facts_);
    for (int i = 1; i <= boards; ++i) lab.script(fmt::format("f{}", i), slow);
    try {
      k3farmbench::run_farm_bench(K3TUNE_ROOT, request(farm, db, cells, lab));
    } catch (...) {
    }
    _exit(0);
  }
  std::int64_t done_at_kill = 0;
  for (const auto start = Clock::now(); Clock::now() - start < std::chrono::seconds(120);) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (waitpid(child, nullptr, WNOHANG) == child) FAIL() << "the controller finished first";
    try {
      done_at_kill = count(db, "SELECT count(*) FROM farm_sweep_cells WHERE outcome = 'measured'");
    } catch (const k3store::StoreError&) {  // not created yet
    }
    if (done_at_kill >= cells / 3) break;
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_GE(done_at_kill, cells / 3);

  // Committed: every cell the database says is measured has its ok aggregate.
  const auto committed = ok_per_cell(db);
  EXPECT_EQ(count(db,
                  "SELECT count(*) FROM farm_sweep_cells s WHERE s.outcome = 'measured' AND "
                  "NOT EXISTS (SELECT 1 FROM aggregates a WHERE a.cell_key = s.cell_key AND "
                  "a.status = 'ok')"),
            0);
  const auto samples_at_kill = count(db, "SELECT count(*) FROM samples");
  {
    auto c = k3store::open_database(db, k3store::OpenMode::kCreateOrUpdate);
    const auto leases = k3store::lease_rows(*c);
    EXPECT_EQ(leases.size(), static_cast<std::size_t>(boards));  // the dead controller's
    for (const auto& row : leases) k3farm::recover_stale_lease(*c, row, nullptr);
  }

  FakeLab lab(list_ops_, facts_);  // the same boards after the controller's death
  auto rq = request(farm, db, cells, lab);
  rq.bench.resume = true;
  const auto out = k3farmbench::run_farm_bench(K3TUNE_ROOT, rq);
  std::printf(
      "controller killed with %lld cells marked done (%zu cells with committed figures, %lld "
      "samples); resume: %d skipped, %d measured, %d runner processes (%d adopted-cell "
      "processes spared); database writer: %s\n",
      static_cast<long long>(done_at_kill), committed.size(),
      static_cast<long long>(samples_at_kill), out.count(k3farmbench::CellStatus::kSkipped),
      out.count(k3farmbench::CellStatus::kMeasured), out.processes_run,
      2 * (cells - static_cast<int>(committed.size())) - out.processes_run,
      out.writes.summary().c_str());
  EXPECT_EQ(out.count(k3farmbench::CellStatus::kSkipped), static_cast<int>(committed.size()));
  EXPECT_EQ(out.count(k3farmbench::CellStatus::kMeasured),
            cells - static_cast<int>(committed.size()));
  EXPECT_LE(out.processes_run, 2 * (cells - static_cast<int>(committed.size())));
  expect_each_once(ok_per_cell(db), static_cast<std::size_t>(cells));
  EXPECT_GE(count(db, "SELECT count(*) FROM samples"), samples_at_kill);
}

// Two controllers in one process, each a full `bench --farm --shared-queue` on one database, A on
// fake boards f1..f14 and B on f7..f20 (so they meet at the leases of f7..f14 and each has boards
// of its own): between them every cell once, and both measure.
TEST_F(FarmScale, TwoControllersOnOverlappingFakeBoardsShareOneQueue) {
  const int boards = 20, cells = 300;
  const std::string db = tmp_ / "results.db";
  const std::string farm = farm_file(boards);
  FakeLab lab(list_ops_, facts_);
  auto rq_a = request(farm, db, cells, lab);
  rq_a.shared_queue = true;
  auto rq_b = rq_a;
  for (int i = 1; i <= boards; ++i) {
    if (i <= 14) rq_a.boards.push_back(fmt::format("f{}", i));
    if (i >= 7) rq_b.boards.push_back(fmt::format("f{}", i));
  }
  k3farmbench::FarmBenchOutcome a, b;
  const auto start = Clock::now();
  std::thread ta([&] { a = k3farmbench::run_farm_bench(K3TUNE_ROOT, rq_a); });
  std::thread tb([&] { b = k3farmbench::run_farm_bench(K3TUNE_ROOT, rq_b); });
  ta.join();
  tb.join();
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("two controllers on %d fake boards: A measured %d, B %d of %d cells; %.1f s\n",
              boards, a.count(k3farmbench::CellStatus::kMeasured),
              b.count(k3farmbench::CellStatus::kMeasured), cells, wall);
  EXPECT_EQ(
      a.count(k3farmbench::CellStatus::kMeasured) + b.count(k3farmbench::CellStatus::kMeasured),
      cells);
  EXPECT_GT(a.count(k3farmbench::CellStatus::kMeasured), 0);
  EXPECT_GT(b.count(k3farmbench::CellStatus::kMeasured), 0);
  EXPECT_EQ(
      a.count(k3farmbench::CellStatus::kUnmeasured) + b.count(k3farmbench::CellStatus::kUnmeasured),
      0);
  expect_each_once(ok_per_cell(db), static_cast<std::size_t>(cells));
  EXPECT_EQ(count(db, "SELECT count(*) FROM farm_queue_claims WHERE state = 'done'"), cells);
  EXPECT_EQ(count(db, "SELECT count(*) FROM farm_leases"), 0);
}

}  // namespace
