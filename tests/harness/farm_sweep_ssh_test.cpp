// Faults inside a real `k3tune bench --farm` sweep on the loopback farm (label farm): two boards,
// each a real sshd on 127.0.0.1 whose runner is the dynamically linked riscv64 k3bench under
// qemu-user at VLEN 1024. Each case prints the samples in the database before and after.
//   - a board's sshd is killed mid-sweep: its cells move to the other board, nothing is lost;
//   - a runner hangs: it is killed at the timeout, its cell fails, the sweep goes on;
//   - a reboot (uptime reset through the board's test hook) between batches: the board is
//     quarantined, its batch marked disturbed and measured again on the other board;
//   - throttling (a thermal zone at 105 C through the test hook) between batches: the batch is
//     marked disturbed and measured again, the board stays in the run;
//   - a stale lease: the board takes no cells until `farm release --stale` recovers it;
//   - a changed host key: the board is refused and nothing runs on it;
// and `k3tune nightly` (smoke profile) with this farm as its farm: one bench step whose cells the
// two ssh boards take from a shared queue.
#include <gtest/gtest.h>
#include <signal.h>

#include <future>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "farm_test_support.h"
#include "harness/host/bench/child_output.h"
#include "harness/host/farm/background_process.h"
#include "harness/host/store/database.h"

namespace {

using namespace k3farm_test;

class FarmSshSweep : public LoopbackFarmTest {
 protected:
  Cmd k3tune(std::vector<std::string> args) const {
    args.insert(args.begin(), "-q");
    return run_k3tune(args);
  }
  // Tiny decode cells under qemu, one cell per probe; `extra` adds shapes, grids, timeouts.
  std::future<Cmd> sweep(std::vector<std::string> extra) const {
    const auto args = tiny_farm_sweep_args(farm_file_, extra);
    return std::async(std::launch::async, [this, args] { return k3tune(args); });
  }
  std::int64_t count(const std::string& sql) const {
    if (!fs::exists(db())) return 0;
    return k3store::open_database(db(), k3store::OpenMode::kReadOnly)->scalar_int(sql);
  }
  std::int64_t samples() const { return count("SELECT count(*) FROM samples"); }
  // Samples of the processes that count: a loaded machine disturbs some processes, which are kept
  // (in samples()) and measured once more.
  std::int64_t counted_samples() const {
    return count(
        "SELECT count(*) FROM samples s JOIN processes p USING (run_uuid, cell_key, process_index)"
        " WHERE p.status = 'ok' AND p.disturbed = 0");
  }
  // What a sweep of `cells` cells x `reps` repetitions stored, whatever the machine's load did
  // (how many processes a loaded machine disturbs, and so measures once more, is not these tests'
  // business: the plumbing is):
  //   - every counted process (ok, undisturbed) has its repetitions;
  //   - `cells` more cells have figures, and each cell's figures rest on exactly its run's counted
  //     processes, the disturbed ones excluded; only when every process of the cell was disturbed
  //     do they rest on all of them (with nothing excluded), which the process rows then show.
  std::int64_t counted_processes() const {
    return count("SELECT count(*) FROM processes WHERE status = 'ok' AND disturbed = 0");
  }
  std::int64_t ok_aggregates() const {
    return count("SELECT count(*) FROM aggregates WHERE status = 'ok'");
  }
  void expect_counted(std::int64_t aggregates_before, int cells, int reps) const {
    EXPECT_EQ(counted_samples(), reps * counted_processes());
    EXPECT_EQ(ok_aggregates() - aggregates_before, cells);
    const std::string per_cell =
        "(SELECT count(*) FROM processes p WHERE p.run_uuid = a.run_uuid AND p.cell_key ="
        " a.cell_key AND p.status = 'ok'";
    const std::string good = per_cell + " AND p.disturbed = 0)", all = per_cell + ")";
    const std::string expected_processes =
        "CASE WHEN " + good + " > 0 THEN " + good + " ELSE " + all + " END";
    const std::string expected_excluded =
        "CASE WHEN " + good + " > 0 THEN " + all + " - " + good + " ELSE 0 END";
    std::string rows;  // each figure's processes and the process rows beside it, for a failure
    auto db_rows = k3store::open_database(db(), k3store::OpenMode::kReadOnly);
    for (auto s = db_rows->prepare("SELECT a.processes, a.excluded_processes, " + good + ", " +
                                   all + " FROM aggregates a WHERE a.status = 'ok'");
         s.step();)
      rows += fmt::format("[aggregate {}/{} excluded; processes {} counted of {}] ", s.integer(0),
                          s.integer(1), s.integer(2), s.integer(3));
    EXPECT_EQ(count("SELECT count(*) FROM aggregates a WHERE a.status = 'ok' AND (a.processes < 1"
                    " OR a.processes != " +
                    expected_processes + " OR a.excluded_processes != " + expected_excluded + ")"),
              0)
        << rows;
  }
  std::int64_t samples_on(const std::string& board) const {
    return count("SELECT count(*) FROM samples s JOIN cells c USING(cell_key) WHERE c.target = '" +
                 board + "'");
  }
  // Waits (up to 10 min) until `sql` counts at least `n`.
  bool wait_for(const std::string& sql, std::int64_t n) const {
    for (int i = 0; i < 6000; ++i) {
      try {
        if (count(sql) >= n) return true;
      } catch (const std::exception&) {  // the database is being created
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  static nlohmann::json json(const Cmd& c) { return nlohmann::json::parse(c.out); }
};

const std::vector<std::string> kFourShapes = {"--shape", "n=64,k=256",  "--shape", "n=96,k=256",
                                              "--shape", "n=128,k=256", "--shape", "n=160,k=256"};

TEST_F(FarmSshSweep, SshdKilledMidSweepCellsMoveNothingIsLost) {
  // Processes of at least 3 x 0.4 s, so the kill lands while b1 measures.
  std::vector<std::string> extra = kFourShapes;
  extra.insert(extra.end(), {"-R", "3", "--min-time", "0.4"});
  auto running = sweep(extra);
  ASSERT_TRUE(
      wait_for("SELECT count(*) FROM processes p JOIN cells c USING(cell_key) WHERE "
               "c.target = 'b1' AND p.status = 'ok'",
               1));
  lab_->sshd(1).kill_all();
  const auto before = samples(), b1_before = samples_on("b1");
  const auto r = running.get();
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = json(r);
  const auto after = samples();
  std::printf("sshd of b1 killed mid-sweep: samples %lld at the kill (b1: %lld), %lld after\n",
              static_cast<long long>(before), static_cast<long long>(b1_before),
              static_cast<long long>(after));
  EXPECT_EQ(samples_on("b1"), b1_before);  // what b1 measured is kept, nothing added
  EXPECT_GT(after, before);
  EXPECT_EQ(j["measured_cells"], 4);
  EXPECT_EQ(j["quarantined"]["b1"]["fault"], "unreachable") << j["quarantined"].dump();
  EXPECT_GE(count("SELECT count(*) FROM farm_sweep_cells WHERE board = 'b1' AND outcome IN "
                  "('moved', 'disturbed')"),
            1);
  // Every cell ended measured, the ones moved on b2.
  for (const auto& c : j["cells"]) EXPECT_EQ(c["status"], "measured") << c.dump();
  EXPECT_EQ(count("SELECT count(*) FROM aggregates a JOIN cells c USING(cell_key) WHERE "
                  "a.status = 'ok' AND c.target = 'b2'"),
            4 - count("SELECT count(*) FROM aggregates a JOIN cells c USING(cell_key) WHERE "
                      "a.status = 'ok' AND c.target = 'b1'"));
}

TEST_F(FarmSshSweep, HangingRunnerIsKilledItsCellFailsTheSweepGoesOn) {
  const auto before = samples(), counted_before = counted_samples();
  const auto aggregates_before = ok_aggregates();
  // The middle cell asks for 100 s per repetition: killed on its board after the 8 s timeout.
  auto r = sweep({"--shape", "n=64,k=256", "--grid", "min_time_s=0.002,100,0.003", "-R", "2",
                  "--timeout", "8"})
               .get();
  EXPECT_EQ(r.code, 3) << r.err;  // finished, one cell failed
  const auto j = json(r);
  std::printf("hanging runner: samples %lld before, %lld after; failed cell: %s\n",
              static_cast<long long>(before), static_cast<long long>(samples()),
              j["cells"][1]["reason"].dump().c_str());
  EXPECT_EQ(j["measured_cells"], 2);
  EXPECT_EQ(j["failed_cells"], 1);
  EXPECT_EQ(j["cells"][1]["status"], "failed");
  EXPECT_NE(j["cells"][1]["reason"].get<std::string>().find("timeout"), std::string::npos)
      << j["cells"][1].dump();
  EXPECT_TRUE(j["quarantined"].empty()) << j["quarantined"].dump();  // one timeout: a cell fault
  expect_counted(aggregates_before, 2, 2);                           // 2 cells, 2 reps
  EXPECT_GE(samples() - before, counted_samples() - counted_before);
  EXPECT_EQ(processes_mentioning(lab_->work_dir("b1") + "/runners"), std::vector<pid_t>{});
  EXPECT_EQ(processes_mentioning(lab_->work_dir("b2") + "/runners"), std::vector<pid_t>{});
}

TEST_F(FarmSshSweep, RebootBetweenBatchesQuarantinesAndTheBatchIsMeasuredAgain) {
  // Once b1's first probe (prepare) is stored, its uptime jumps back to 5 s: the next probe
  // after a batch sees a reboot.
  std::vector<std::string> extra = kFourShapes;
  extra.insert(extra.end(), {"-R", "2", "--min-time", "0.2"});
  auto running = sweep(extra);
  ASSERT_TRUE(wait_for("SELECT count(*) FROM farm_probes WHERE board = 'b1' AND ok = 1", 1));
  long long uptime = 0;
  std::istringstream(read_file("/proc/uptime")) >> uptime;
  fs::create_directories(lab_->work_dir("b1") + "/test-hooks");
  write_file(lab_->work_dir("b1") + "/test-hooks/uptime_offset_s", std::to_string(5 - uptime));
  const auto before = samples();
  const auto r = running.get();
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = json(r);
  const auto disturbed = count(
      "SELECT count(*) FROM processes p JOIN cells c USING(cell_key) WHERE c.target = 'b1' AND "
      "p.disturbed = 1");
  std::printf("reboot of b1: samples %lld at the hook, %lld after; %lld b1 processes disturbed\n",
              static_cast<long long>(before), static_cast<long long>(samples()),
              static_cast<long long>(disturbed));
  EXPECT_EQ(j["quarantined"]["b1"]["fault"], "rebooted") << j.dump();
  EXPECT_GE(disturbed, 1);  // b1's batch since the last good probe: kept, marked
  EXPECT_GE(count("SELECT count(*) FROM farm_sweep_cells WHERE board = 'b1' AND outcome = "
                  "'disturbed'"),
            1);
  EXPECT_EQ(count("SELECT count(*) FROM aggregates a JOIN cells c USING(cell_key) WHERE "
                  "c.target = 'b1' AND a.status = 'ok'"),
            0);
  EXPECT_EQ(j["measured_cells"], 4);
  for (const auto& c : j["cells"]) EXPECT_EQ(c["board"], "b2") << c.dump();
  EXPECT_GE(samples(), before);
}

TEST_F(FarmSshSweep, ThrottlingBetweenBatchesMarksTheBatchAndMeasuresItAgain) {
  // Once b1's first probe is stored its probes report a thermal zone at 105 C (limit 95 C) until
  // the sweep has marked a batch; then the zone cools down and b1 goes on measuring.
  std::vector<std::string> extra = kFourShapes;
  extra.insert(extra.end(), {"-R", "2", "--min-time", "0.2"});
  auto running = sweep(extra);
  ASSERT_TRUE(wait_for("SELECT count(*) FROM farm_probes WHERE board = 'b1' AND ok = 1", 1));
  const std::string hook = lab_->work_dir("b1") + "/test-hooks/extra_facts";
  fs::create_directories(lab_->work_dir("b1") + "/test-hooks");
  write_file(hook, "thermal thermal_zone9 cpu-test 105000\n");
  const auto before = samples();
  const bool marked = wait_for(
      "SELECT count(*) FROM farm_sweep_cells WHERE board = 'b1' AND outcome = 'disturbed'", 1);
  fs::remove(hook);
  const auto r = running.get();
  ASSERT_TRUE(marked);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = json(r);
  const auto disturbed = count(
      "SELECT count(*) FROM processes p JOIN cells c USING(cell_key) WHERE c.target = 'b1' AND "
      "p.disturbed = 1");
  std::printf(
      "throttling of b1: samples %lld at the hook, %lld after; %lld b1 processes disturbed\n",
      static_cast<long long>(before), static_cast<long long>(samples()),
      static_cast<long long>(disturbed));
  EXPECT_TRUE(j["quarantined"].empty()) << j.dump();  // throttling is not a board fault
  EXPECT_GE(disturbed, 1);
  EXPECT_GE(count("SELECT count(*) FROM farm_sweep_cells WHERE board = 'b1' AND outcome = "
                  "'disturbed' AND reason LIKE '%throttled%cpu-test at 105.0 C%'"),
            1);
  // Every cell ends measured, each disturbed one again after its disturbed hand-out.
  EXPECT_EQ(j["measured_cells"], 4);
  EXPECT_EQ(j["failed_cells"], 0);
  EXPECT_EQ(count("SELECT count(*) FROM farm_sweep_cells d WHERE d.outcome = 'disturbed' AND NOT "
                  "EXISTS (SELECT 1 FROM farm_sweep_cells m WHERE m.cell_index = d.cell_index AND "
                  "m.outcome = 'measured' AND m.attempt > d.attempt)"),
            0);
  EXPECT_GE(samples(), before);
}

TEST_F(FarmSshSweep, StaleLeaseKeepsTheBoardOutUntilRecoveredExplicitly) {
  auto holder = std::make_unique<k3farm::BackgroundProcess>(
      std::vector<std::string>{K3TUNE_PATH, "--root", K3TUNE_ROOT, "--db", db(), "farm", "--farm",
                               farm_file_, "lease", "--board", "b1", "--hold", "600"});
  ASSERT_EQ(holder->read_line(60), std::optional<std::string>("leased b1"))
      << holder->stderr_text();
  kill(holder->pid(), SIGKILL);  // dies without releasing: its row stays, stale
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const auto before = samples();
  const std::vector<std::string> two = {"--shape", "n=64,k=256", "--shape",    "n=96,k=256",
                                        "-R",      "2",          "--min-time", "0.002"};
  const auto r = sweep(two).get();
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = json(r);
  const auto after = samples();
  std::printf("stale lease of b1: samples %lld before, %lld after (b1: %lld)\n",
              static_cast<long long>(before), static_cast<long long>(after),
              static_cast<long long>(samples_on("b1")));
  ASSERT_TRUE(j["unused_boards"].contains("b1")) << j.dump();
  const std::string why = j["unused_boards"]["b1"];
  EXPECT_NE(why.find("board b1: stale lease of "), std::string::npos) << why;
  EXPECT_NE(why.find("recover with `k3tune farm release --stale --board b1`"), std::string::npos);
  EXPECT_EQ(samples_on("b1"), 0);
  EXPECT_EQ(j["measured_cells"], 2);
  // Still stale: a second sweep does not take it either; only the explicit release does.
  EXPECT_EQ(count("SELECT count(*) FROM farm_leases WHERE board = 'b1'"), 1);
  const auto released = k3tune({"farm", "--farm", farm_file_, "release", "--stale"});
  ASSERT_EQ(released.code, 0) << released.err;
  EXPECT_EQ(count("SELECT count(*) FROM farm_leases"), 0);
  std::vector<std::string> resumed = two;
  resumed.push_back("--resume");
  const auto again = sweep(resumed).get();
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(json(again)["skipped_cells"], 2);  // measured once, never again
  EXPECT_TRUE(json(again)["unused_boards"].empty());
  EXPECT_EQ(samples(), after);
}

TEST_F(FarmSshSweep, ChangedHostKeyIsRefusedAndNothingRunsOnTheBoard) {
  lab_->sshd(1).kill_all();
  lab_->sshd(1).new_host_key();
  lab_->sshd(1).start();  // same port, new key; known_hosts still holds the old one
  farm_file_ = lab_->write_farm(K3_FARM_RISCV_RUNNER);  // the port may have changed
  const auto before = samples(), counted_before = counted_samples();
  const auto aggregates_before = ok_aggregates();
  const auto r =
      sweep({"--shape", "n=64,k=256", "--shape", "n=96,k=256", "-R", "2", "--min-time", "0.002"})
          .get();
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = json(r);
  std::printf("changed host key of b1: samples %lld before, %lld after (b1: %lld)\n",
              static_cast<long long>(before), static_cast<long long>(samples()),
              static_cast<long long>(samples_on("b1")));
  EXPECT_EQ(k3bench::child_output_problems(K3TUNE_ROOT, k3bench::ChildOutput::kBench, j),
            std::vector<std::string>{});
  EXPECT_EQ(j["quarantined"]["b1"]["fault"], "host-key") << j.dump();
  EXPECT_NE(j["quarantined"]["b1"]["reason"].get<std::string>().find("changed"), std::string::npos);
  EXPECT_EQ(count("SELECT count(*) FROM cells WHERE target = 'b1'"), 0);
  EXPECT_FALSE(fs::exists(lab_->work_dir("b1") + "/runners"));  // not even a deploy
  EXPECT_EQ(j["measured_cells"], 2);
  expect_counted(aggregates_before, 2, 2);  // 2 cells, 2 reps
  EXPECT_GE(samples() - before, counted_samples() - counted_before);
}

TEST_F(FarmSshSweep, NightlyOnTheSshFarmBenchesOnItsBoards) {
  // The host steps (tune, table verify, verdict) run this tree's k3bench as the local target.
  const std::string targets = lab_->dir() / "targets.toml";
  write_file(targets, std::string("[targets.local]\nkind = \"local\"\nvariant = \"host\"\n") +
                          "runner = \"" + K3BENCH_PATH + "\"\ntimeout_s = 300\n");
  const std::string dir = lab_->dir() / "nightly/ssh1";
  const auto r = k3targets::run_process(
      {K3TUNE_PATH, "--root", K3TUNE_ROOT, "--db", db(), "--targets", targets, "nightly",
       "--profile", "smoke", "--farm", farm_file_, "--no-build", "--dir", dir},
      k3targets::ProcessOptions::with_timeout(900));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::printf("nightly on the ssh farm: %lld samples on b1, %lld on b2\n",
              static_cast<long long>(samples_on("b1")), static_cast<long long>(samples_on("b2")));
  EXPECT_EQ(count("SELECT count(*) FROM nightly_steps WHERE status <> 'done'"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM nightly_steps WHERE step = 'bench'"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM nightly_steps WHERE step LIKE 'build%'"), 0);
  // Both decode shapes of the smoke profile measured on the ssh boards (whichever took them).
  EXPECT_EQ(count("SELECT count(DISTINCT cell_index) FROM farm_sweep_cells WHERE outcome = "
                  "'measured' AND board IN ('b1', 'b2')"),
            2);
  EXPECT_EQ(count("SELECT count(*) FROM farm_probes WHERE board IN ('b1', 'b2') AND ok = 1") > 0,
            true);
  EXPECT_GT(samples_on("b1") + samples_on("b2"), 0);
  for (const char* f : {"summary.md", "report.html", "tables/farm.json", "logs/bench.json"})
    EXPECT_TRUE(fs::exists(dir + "/" + f)) << f;
  // The table was made on a board (the campaign, counted: the boards are emulated), with the
  // board's fingerprint; a counted table is not verified by timing.
  const auto table = nlohmann::json::parse(read_file(dir + "/tables/farm.json"));
  const std::string maker = table["board"]["name"];
  EXPECT_TRUE(maker == "b1" || maker == "b2") << table["board"].dump();
  EXPECT_EQ(table["board"]["fingerprint"]["vlen"], 1024);
  EXPECT_EQ(table["source"]["objective"], "instructions");
  EXPECT_NE(r.out.find("verify-farm: skipped: no timed table to verify"), std::string::npos)
      << r.out;
  // One verdict per fingerprint: b1 measures (the first night: no baseline yet), b2 is the same.
  EXPECT_NE(r.out.find("board-verdict-b2: skipped: judged on b1 (the same fingerprint)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(
      count(
          "SELECT count(*) FROM nightly_steps WHERE step = 'board-verdict-b1' AND status = 'done'"),
      1);
}

}  // namespace
