// Board state beyond one run and one controller.
//   FarmState (label harness; local boards running the host k3bench, no sshd): board events merge
//   from shard databases and the latest is the state; quarantine_until is validated; a farm beyond
//   the open-file hard limit is refused (prlimit), and one within it runs although the soft limit
//   given was too low (k3tune raises it to the hard limit); two controllers sharing a database
//   with --shared-queue measure every cell exactly once between them.
//   FarmSshState (label farm; the loopback farm of real sshd boards running the riscv64 k3bench
//   under qemu-user): a quarantine outlives its run until `farm release --board`, or until a
//   healthy probe when the inventory says so; a second controller waits for a board the first
//   holds and then measures; a one-board command waits for its board; two controllers on the same
//   boards both measure every cell; a controller-side failure (the database locked past its busy
//   timeout) fails the run with one line and quarantines nothing.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <future>

#include <nlohmann/json.hpp>

#include "farm_test_support.h"
#include "harness/host/farm/background_process.h"
#include "harness/host/farm/inventory.h"
#include "harness/host/store/database.h"
#include "harness/host/store/farm_state.h"
#include "harness/host/store/maintenance.h"

namespace {

using namespace k3farm_test;

std::int64_t count(const std::string& db, const std::string& sql) {
  if (!fs::exists(db)) return 0;
  return k3store::open_database(db, k3store::OpenMode::kReadOnly)->scalar_int(sql);
}

struct Result {
  int code;
  std::string out, err;
  nlohmann::json json() const { return nlohmann::json::parse(out); }
};

Result run(const std::vector<std::string>& argv) {
  const auto r = k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(900));
  return {r.signal ? 128 + r.signal : r.exit_code, r.out, r.err};
}

std::string last_line_of(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const auto nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

TEST(FarmState, BoardEventsMergeFromShardsAndTheLatestIsTheState) {
  TempDir tmp;
  {
    auto a = k3store::open_database(tmp / "a.db", k3store::OpenMode::kCreateOrUpdate);
    k3store::insert_board_event(
        *a, {"lab", "k3-01", "2026-12-01T10:00:00.000001Z", k3store::BoardEvent::kQuarantined,
             "rebooted", "uptime went back", "run-a", "h:1"});
    k3store::insert_board_event(
        *a, {"lab", "k3-02", "2026-12-01T10:00:00.000002Z", k3store::BoardEvent::kQuarantined,
             "unreachable", "ssh: connection refused", "run-a", "h:1"});
    auto b = k3store::open_database(tmp / "b.db", k3store::OpenMode::kCreateOrUpdate);
    k3store::insert_board_event(
        *b, {"lab", "k3-01", "2026-12-01T11:00:00.000000Z", k3store::BoardEvent::kReleased, "",
             "lifted by hand", "", "h:2"});
    k3store::insert_board_event(
        *b, {"other", "k3-02", "2026-12-01T12:00:00.000000Z", k3store::BoardEvent::kReleased, "",
             "another farm's board of the same name", "", "h:2"});
  }
  for (int pass = 0; pass < 2; ++pass) {
    const auto added = k3store::merge_databases(tmp / "all.db", {tmp / "a.db", tmp / "b.db"});
    EXPECT_EQ(added.at("farm_board_events"), pass == 0 ? 4 : 0);
  }
  auto all = k3store::open_database(tmp / "all.db", k3store::OpenMode::kReadOnly);
  const auto states = k3store::board_states(*all, "lab");
  ASSERT_EQ(states.size(), 2u);
  EXPECT_EQ(states.at("k3-01").event,
            k3store::BoardEvent::kReleased);  // released after its quarantine
  EXPECT_FALSE(states.at("k3-01").quarantined());
  EXPECT_TRUE(states.at("k3-02").quarantined());  // the other farm's release is not this farm's
  EXPECT_EQ(states.at("k3-02").fault, "unreachable");
}

TEST(FarmState, QuarantineUntilIsReleaseByDefaultAndValidated) {
  TempDir tmp;
  const std::string f = tmp / "farm.toml";
  write_file(f,
             "[farm]\nname = \"x\"\n[defaults]\nkind = \"local\"\nquarantine_until = \"healthy\"\n"
             "[boards.a]\nwork_dir = \"/w/a\"\n[boards.b]\nwork_dir = \"/w/b\"\n"
             "quarantine_until = \"release\"\n");
  const auto cfg = k3farm::load_farm(f);
  EXPECT_EQ(cfg.find("a")->quarantine_until, "healthy");
  EXPECT_EQ(cfg.find("b")->quarantine_until, "release");
  EXPECT_EQ(k3farm::builtin_local_farm("/src").boards.at(0).quarantine_until, "release");
  write_file(f,
             "[farm]\nname = \"x\"\n[boards.a]\nkind = \"local\"\nwork_dir = \"/w/a\"\n"
             "quarantine_until = \"never\"\n");
  try {
    k3farm::load_farm(f);
    FAIL() << "accepted quarantine_until = never";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              f + ":6: boards.a.quarantine_until: must be \"release\" (k3tune farm release "
                  "--board) or \"healthy\" (a later probe)");
  }
}

// 20 local boards need about 20 x 10 + 64 descriptors: more than a hard limit of 128 allows
// (refused, nothing written), but fine once a soft limit of 128 is raised to a hard 4096.
TEST(FarmState, AFarmBeyondTheOpenFileHardLimitIsRefusedOneWithinItRuns) {
  TempDir tmp;
  std::string farm = "[farm]\nname = \"many\"\n[defaults]\nkind = \"local\"\nrunner = \"" +
                     std::string(K3BENCH_PATH) + "\"\nvariant = \"host\"\ntimeout_s = 120\n";
  for (int i = 1; i <= 20; ++i)
    farm += "[boards.l" + std::to_string(i) + "]\nwork_dir = \"" +
            (tmp / ("l" + std::to_string(i))) + "\"\n";
  write_file(tmp / "farm.toml", farm);
  const std::string db = tmp / "results.db";
  auto bench = [&](const std::string& nofile) {
    return run(with_args({"prlimit", "--nofile=" + nofile, K3TUNE_PATH, "--root", K3TUNE_ROOT,
                          "--db", db, "-q", "--json", "bench", "--farm", tmp / "farm.toml", "--op",
                          "linear_decode", "--shape", "n=64,k=128"},
                         quick_measure("0.002")));
  };
  const auto refused = bench("128:128");
  EXPECT_EQ(refused.code, 2) << refused.err;
  EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
  EXPECT_NE(refused.err.find("k3tune: --farm: 20 boards need about "), std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("the open-file limit RLIMIT_NOFILE is 128 (hard limit 128"),
            std::string::npos)
      << refused.err;
  EXPECT_FALSE(fs::exists(db));
  for (int i = 1; i <= 20; ++i) EXPECT_FALSE(fs::exists(tmp / ("l" + std::to_string(i))));
  const auto ran = bench("128:4096");
  ASSERT_EQ(ran.code, 0) << ran.err;
  EXPECT_EQ(ran.json()["measured_cells"], 1);
  std::printf("20 local boards: refused under nofile 128:128; measured under 128:4096 in %.1f s\n",
              ran.json()["wall_s"].get<double>());
}

// Two controllers (real k3tune processes) on one database, each with its own local board, run the
// same command with --shared-queue: every cell is measured exactly once, by one of them.
TEST(FarmState, ControllersSharingADatabaseShareOneQueue) {
  TempDir tmp;
  write_file(tmp / "farm.toml",
             std::string("[farm]\nname = \"two-local\"\n[defaults]\nkind = \"local\"\n") +
                 "runner = \"" + K3BENCH_PATH + "\"\nvariant = \"host\"\ntimeout_s = 120\n" +
                 "[boards.l1]\nwork_dir = \"" + (tmp / "l1") + "\"\n[boards.l2]\nwork_dir = \"" +
                 (tmp / "l2") + "\"\n");
  const std::string db = tmp / "results.db";
  auto job = [&](const std::string& board, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv{K3TUNE_PATH,
                                  "--root",
                                  K3TUNE_ROOT,
                                  "--db",
                                  db,
                                  "-q",
                                  "--json",
                                  "bench",
                                  "--farm",
                                  tmp / "farm.toml",
                                  "--board",
                                  board,
                                  "--shared-queue",
                                  "--cells-per-probe",
                                  "1"};
    argv = with_args(with_args(argv, six_decode_cells()), quick_measure("0.02"));
    return run(with_args(argv, extra));
  };
  const auto bad = job("l1", {"--shard", "1/2"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err.rfind("k3tune: --shared-queue and --shard: ", 0), 0u) << bad.err;
  EXPECT_FALSE(fs::exists(db));
  auto a = std::async(std::launch::async, [&] { return job("l1"); });
  auto b = std::async(std::launch::async, [&] { return job("l2"); });
  const auto ra = a.get(), rb = b.get();
  ASSERT_EQ(ra.code, 0) << ra.err;
  ASSERT_EQ(rb.code, 0) << rb.err;
  const auto ja = ra.json(), jb = rb.json();
  std::printf("shared queue: controller on l1 measured %d, on l2 %d of 6 cells (%.1f s, %.1f s)\n",
              ja["measured_cells"].get<int>(), jb["measured_cells"].get<int>(),
              ja["wall_s"].get<double>(), jb["wall_s"].get<double>());
  EXPECT_EQ(ja["measured_cells"].get<int>() + jb["measured_cells"].get<int>(), 6);
  EXPECT_EQ(ja["skipped_cells"].get<int>() + jb["skipped_cells"].get<int>(), 6);
  EXPECT_EQ(count(db, "SELECT count(*) FROM farm_sweep_cells WHERE outcome = 'measured'"), 6);
  EXPECT_EQ(count(db,
                  "SELECT count(DISTINCT cell_index) FROM farm_sweep_cells WHERE outcome = "
                  "'measured'"),
            6);
  EXPECT_EQ(count(db, "SELECT count(*) FROM aggregates WHERE status = 'ok'"), 6);
  EXPECT_EQ(count(db, "SELECT count(*) FROM farm_queue_claims WHERE state = 'done'"), 6);
  // The same command again: every cell is done in the shared queue; nothing is measured twice.
  const auto again = job("l2");
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(again.json()["skipped_cells"], 6);
  EXPECT_EQ(count(db, "SELECT count(*) FROM aggregates WHERE status = 'ok'"), 6);
}

class FarmSshState : public LoopbackFarmTest {
 protected:
  Result k3tune(std::vector<std::string> args, const std::string& db_path = "") const {
    args.insert(args.begin(), "-q");
    const auto r = run_k3tune(args, db_path);
    return {r.code, r.out, r.err};
  }
  // Tiny decode cells under qemu, one cell per probe.
  std::vector<std::string> sweep_args(const std::vector<std::string>& extra) const {
    return tiny_farm_sweep_args(farm_file_, extra);
  }
  Result sweep(const std::vector<std::string>& extra, const std::string& db_path = "") const {
    return k3tune(sweep_args(extra), db_path);
  }
  std::future<Result> sweep_async(const std::vector<std::string>& extra,
                                  const std::string& db_path = "") const {
    return std::async(std::launch::async, [this, extra, db_path] { return sweep(extra, db_path); });
  }
  std::int64_t count_in(const std::string& sql, const std::string& db_path = "") const {
    return count(db_path.empty() ? db() : db_path, sql);
  }
  std::int64_t samples_on(const std::string& board, const std::string& db_path = "") const {
    return count_in(
        "SELECT count(*) FROM samples s JOIN cells c USING(cell_key) WHERE c.target = '" + board +
            "'",
        db_path);
  }
  bool wait_for(const std::string& sql, std::int64_t n, const std::string& db_path = "") const {
    for (int i = 0; i < 6000; ++i) {
      try {
        if (count_in(sql, db_path) >= n) return true;
      } catch (const std::exception&) {  // the database is being created
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  // b1's sshd is down for one sweep: b1 is quarantined (unreachable); then it comes back.
  void quarantine_b1_in_a_run() {
    lab_->sshd(1).kill_all();
    const auto r = sweep(kTwo);
    ASSERT_EQ(r.code, 0) << r.err;
    ASSERT_EQ(r.json()["quarantined"]["b1"]["fault"], "unreachable") << r.out;
    lab_->sshd(1).start();
    lab_->write_known_hosts();
    farm_file_ = lab_->write_farm(K3_FARM_RISCV_RUNNER, "", farm_extra_);
    if (!defaults_extra_.empty()) {
      std::string text = read_file(farm_file_);
      text.insert(text.find("[defaults]\n") + 11, defaults_extra_);
      write_file(farm_file_, text);
    }
  }
  const std::vector<std::string> kTwo = {"--shape", "n=64,k=256", "--shape",    "n=96,k=256",
                                         "-R",      "2",          "--min-time", "0.002"};
  std::string farm_extra_, defaults_extra_;
};

TEST_F(FarmSshState, AQuarantineOutlivesItsRunUntilReleasedByHand) {
  quarantine_b1_in_a_run();
  // `farm list` shows the standing quarantine, with its reason and time.
  const auto listed = k3tune({"farm", "--farm", farm_file_, "list"});
  ASSERT_EQ(listed.code, 0) << listed.err;
  std::printf("$ k3tune farm list\n%s", listed.out.c_str());
  EXPECT_NE(listed.out.find("QUARANTINED since 20"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("(unreachable, run "), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("until k3tune farm release --board b1"), std::string::npos);
  // The next run leaves b1 alone, although it answers again: not even a deploy.
  const auto second = sweep(kTwo);
  ASSERT_EQ(second.code, 0) << second.err;
  const auto j = second.json();
  ASSERT_TRUE(j["unused_boards"].contains("b1")) << j.dump();
  const std::string why = j["unused_boards"]["b1"];
  EXPECT_NE(why.find("board b1: quarantined since "), std::string::npos) << why;
  EXPECT_NE(why.find("`k3tune farm release --board b1` lets it back in"), std::string::npos);
  EXPECT_EQ(j["measured_cells"], 2);
  EXPECT_EQ(samples_on("b1"), 0);
  EXPECT_FALSE(fs::exists(lab_->work_dir("b1")));
  // Releasing a board that is not quarantined is refused and writes nothing.
  const auto events = count_in("SELECT count(*) FROM farm_board_events");
  const auto wrong = k3tune({"farm", "--farm", farm_file_, "release", "--board", "b2"});
  EXPECT_EQ(wrong.code, 2);
  EXPECT_NE(wrong.err.find("--board b2: not quarantined in "), std::string::npos) << wrong.err;
  EXPECT_EQ(count_in("SELECT count(*) FROM farm_board_events"), events);
  // The release lets it back in.
  const auto released = k3tune({"farm", "--farm", farm_file_, "release", "--board", "b1"});
  ASSERT_EQ(released.code, 0) << released.err;
  std::printf("$ k3tune farm release --board b1\n%s", released.out.c_str());
  EXPECT_NE(released.out.find("board b1: quarantine of 20"), std::string::npos) << released.out;
  const auto after = k3tune({"farm", "--farm", farm_file_, "list"});
  std::printf("$ k3tune farm list\n%s", after.out.c_str());
  EXPECT_EQ(after.out.find("QUARANTINED"), std::string::npos) << after.out;
  EXPECT_NE(after.out.find("released 20"), std::string::npos) << after.out;
  const auto third =
      sweep({"--board", "b1", "--shape", "n=64,k=256", "-R", "2", "--min-time", "0.002"});
  ASSERT_EQ(third.code, 0) << third.err;
  EXPECT_EQ(third.json()["measured_cells"], 1);
  EXPECT_GT(samples_on("b1"), 0);
}

TEST_F(FarmSshState, AHealthyProbeLiftsTheQuarantineWhenTheInventorySaysSo) {
  defaults_extra_ = "quarantine_until = \"healthy\"\n";
  quarantine_b1_in_a_run();
  const auto r =
      sweep({"--board", "b1", "--shape", "n=64,k=256", "-R", "2", "--min-time", "0.002"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.json()["measured_cells"], 1);
  EXPECT_TRUE(r.json()["quarantined"].empty()) << r.out;
  EXPECT_GT(samples_on("b1"), 0);
  EXPECT_EQ(count_in("SELECT count(*) FROM farm_board_events WHERE board = 'b1' AND event = "
                     "'recovered' AND reason LIKE 'probed healthy (quarantined since %'"),
            1);
  const auto listed = k3tune({"farm", "--farm", farm_file_, "list"});
  std::printf("%s", listed.out.c_str());
  EXPECT_NE(listed.out.find("recovered 20"), std::string::npos) << listed.out;
}

// Controller A measures on b1; controller B (another database: they meet only at the board's
// lock) asks for b1 meanwhile, waits, and measures once A has let go.
TEST_F(FarmSshState, ASecondControllerWaitsForTheBoardAndThenMeasures) {
  const std::string db_b = lab_->dir() / "b.db";
  const std::vector<std::string> cells = {"--board",    "b1", "--shape", "n=64,k=256", "--shape",
                                          "n=96,k=256", "-R", "3",       "--min-time", "0.4"};
  auto a = sweep_async(cells);
  ASSERT_TRUE(wait_for("SELECT count(*) FROM farm_probes WHERE board = 'b1' AND ok = 1", 1));
  std::vector<std::string> waiting = cells;
  waiting.insert(waiting.end(), {"--lease-wait", "600"});
  const auto started = std::chrono::steady_clock::now();
  auto b = sweep_async(waiting, db_b);
  const auto ra = a.get();
  const double a_done =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const auto rb = b.get();
  ASSERT_EQ(ra.code, 0) << ra.err;
  ASSERT_EQ(rb.code, 0) << rb.err;
  std::printf("controller A: %.1f s (done %.1f s after B asked); controller B: %.1f s\n",
              ra.json()["wall_s"].get<double>(), a_done, rb.json()["wall_s"].get<double>());
  EXPECT_EQ(ra.json()["measured_cells"], 2);
  EXPECT_EQ(rb.json()["measured_cells"], 2);
  EXPECT_TRUE(rb.json()["unused_boards"].empty()) << rb.out;
  EXPECT_NE(rb.err.find("board b1: " + lab_->work_dir("b1") +
                        "/lease.lock is held on the board (another controller); waiting for it "
                        "(up to 600 s)"),
            std::string::npos)
      << rb.err;
  EXPECT_GE(rb.json()["wall_s"].get<double>(), a_done - 1);  // B measured after A let go
  EXPECT_GT(samples_on("b1", db_b), 0);
  // B's first probe of b1 (taken once leased) is not earlier than A's last one.
  auto text_of = [](const std::string& path, const std::string& sql) {
    auto c = k3store::open_database(path, k3store::OpenMode::kReadOnly);
    auto s = c->prepare(sql);
    return s.step() ? s.text(0) : std::string();
  };
  EXPECT_GE(text_of(db_b, "SELECT min(taken_at) FROM farm_probes WHERE board = 'b1'"),
            text_of(db(), "SELECT max(taken_at) FROM farm_probes WHERE board = 'b1'"));
}

// A one-board command (count --farm) whose only board is leased by `farm lease --hold 4` waits
// for it, says so once (not quiet: the notes are on stderr), and counts when it is let go.
TEST_F(FarmSshState, AOneBoardCommandWaitsForItsBoardAndThenCounts) {
  auto holder = std::make_unique<k3farm::BackgroundProcess>(
      std::vector<std::string>{K3TUNE_PATH, "--root", K3TUNE_ROOT, "--db", db(), "farm", "--farm",
                               farm_file_, "lease", "--board", "b1", "--hold", "4"});
  ASSERT_EQ(holder->read_line(60), std::optional<std::string>("leased b1"))
      << holder->stderr_text();
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_k3tune({"--json", "count", "--farm", farm_file_, "--board", "b1",
                             "--lease-wait", "120", "--case", "linear_decode n=64,k=256"});
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  std::printf("count --farm waited for b1 and counted in %.1f s\n", took);
  EXPECT_NE(r.err.find("board b1 not used: board b1: leased by "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("waiting up to 120 s for b1 (held by another controller)"),
            std::string::npos)
      << r.err;
  EXPECT_GT(nlohmann::json::parse(r.out).at(0)["instructions_per_call"].get<double>(), 0);
  EXPECT_EQ(count_in("SELECT count(*) FROM farm_leases"), 0);
  // Without a wait the same command gives up at once, naming the holder.
  auto again = std::make_unique<k3farm::BackgroundProcess>(
      std::vector<std::string>{K3TUNE_PATH, "--root", K3TUNE_ROOT, "--db", db(), "farm", "--farm",
                               farm_file_, "lease", "--board", "b1", "--hold", "30"});
  ASSERT_EQ(again->read_line(60), std::optional<std::string>("leased b1"));
  const auto refused = k3tune({"count", "--farm", farm_file_, "--board", "b1", "--lease-wait", "0",
                               "--case", "linear_decode n=64,k=256"});
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.err.find("--farm loopback: no board could be taken (b1: board b1: leased by "),
            std::string::npos)
      << refused.err;
}

// Two controllers on the same two boards and the same database: the second waits for whichever
// board the first holds; both finish with every cell measured.
TEST_F(FarmSshState, TwoControllersOnTheSameBoardsBothMeasureEveryCell) {
  const std::vector<std::string> cells = {"--shape",    "n=64,k=256",  "--shape",      "n=96,k=256",
                                          "--shape",    "n=128,k=256", "-R",           "3",
                                          "--min-time", "0.4",         "--lease-wait", "600"};
  auto a = sweep_async(cells);
  ASSERT_TRUE(wait_for("SELECT count(*) FROM farm_leases", 1));
  auto b = sweep_async(cells);
  const auto ra = a.get(), rb = b.get();
  ASSERT_EQ(ra.code, 0) << ra.err;
  ASSERT_EQ(rb.code, 0) << rb.err;
  std::size_t waits = 0;
  for (auto at = rb.err.find("waiting for it"); at != std::string::npos;
       at = rb.err.find("waiting for it", at + 1))
    ++waits;
  std::printf(
      "two controllers on b1+b2: A %.1f s, B %.1f s (B waited for %zu boards); samples b1 %lld, "
      "b2 %lld\n",
      ra.json()["wall_s"].get<double>(), rb.json()["wall_s"].get<double>(), waits,
      static_cast<long long>(samples_on("b1")), static_cast<long long>(samples_on("b2")));
  for (const auto& r : {ra, rb}) {
    EXPECT_EQ(r.json()["measured_cells"], 3) << r.out;
    EXPECT_EQ(r.json()["unmeasured_cells"], 0) << r.out;
    EXPECT_TRUE(r.json()["quarantined"].empty()) << r.out;
  }
  EXPECT_EQ(count_in("SELECT count(*) FROM farm_sweep_cells WHERE outcome = 'measured'"), 6);
  EXPECT_EQ(count_in("SELECT count(*) FROM farm_leases"), 0);
}

// The database is locked (an exclusive transaction held past the 30 s busy timeout) while the
// sweep measures: the run stops with one line naming the controller's failure, exit 1, and no
// board is quarantined -- in this run or for later ones.
TEST_F(FarmSshState, AControllerSideFailureQuarantinesNoBoard) {
  auto running =
      sweep_async({"--shape", "n=64,k=256", "--shape", "n=96,k=256", "--shape", "n=128,k=256",
                   "--shape", "n=160,k=256", "-R", "3", "--min-time", "0.4"});
  ASSERT_TRUE(wait_for("SELECT count(*) FROM processes WHERE status = 'ok'", 1));
  sqlite3* lock = nullptr;
  ASSERT_EQ(sqlite3_open(db().c_str(), &lock), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(lock, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  const auto samples_at_lock = [&] {
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(lock, "SELECT count(*) FROM samples", -1, &s, nullptr);
    sqlite3_step(s);
    const auto n = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return n;
  }();
  std::this_thread::sleep_for(std::chrono::seconds(40));
  sqlite3_exec(lock, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(lock);
  const auto r = running.get();
  std::printf(
      "database locked for 40 s mid-sweep: exit %d; %lld samples at the lock, %lld after\n"
      "  %s\n",
      r.code, static_cast<long long>(samples_at_lock),
      static_cast<long long>(count_in("SELECT count(*) FROM samples")),
      last_line_of(r.err).c_str());
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  const std::string line = last_line_of(r.err);
  EXPECT_EQ(line.rfind("k3tune: farm sweep ", 0), 0u) << r.err;
  EXPECT_NE(line.find("stopped by a controller failure while board b"), std::string::npos) << line;
  EXPECT_NE(line.find("database is locked"), std::string::npos) << line;
  EXPECT_NE(line.find("no board quarantined for it"), std::string::npos) << line;
  EXPECT_EQ(count_in("SELECT count(*) FROM farm_quarantine"), 0);
  EXPECT_EQ(count_in("SELECT count(*) FROM farm_board_events"), 0);
  EXPECT_GE(count_in("SELECT count(*) FROM samples"), samples_at_lock);  // nothing lost
  const auto listed = k3tune({"--json", "farm", "--farm", farm_file_, "list"});
  ASSERT_EQ(listed.code, 0) << listed.err;
  for (const auto& b : listed.json()["boards"]) {
    EXPECT_TRUE(b["state"].is_null()) << b.dump();
    EXPECT_TRUE(b["lease"].is_null()) << b.dump();  // released on the way out
  }
}

}  // namespace
