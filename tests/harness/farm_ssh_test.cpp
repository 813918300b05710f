// The farm on a real loopback farm (label farm): one OpenSSH sshd per board on 127.0.0.1, keys and
// known_hosts generated here, boards running the dynamically linked riscv64 k3bench under
// qemu-user at VLEN 1024. Deploy once per build hash, hostile strings, host-key refusal, board-side
// timeouts, a board dying mid-run (cells move, samples kept), a reboot, and a stale lease.
#include <gtest/gtest.h>
#include <signal.h>

#include <future>

#include <nlohmann/json.hpp>

#include "farm_test_support.h"
#include "harness/host/farm/background_process.h"
#include "harness/host/farm/farm.h"
#include "harness/host/store/database.h"
#include "harness/host/store/farm_state.h"
#include "harness/host/store/results.h"

namespace {

using namespace k3farm_test;

const std::vector<std::string> kTinyDecode = {"--op",         "linear_decode",
                                              "--shape",      "n=96,k=256",
                                              "--params",     "workers=2,copies=1",
                                              "--reps",       "2",
                                              "--iterations", "2",
                                              "--warmup",     "0",
                                              "--json"};

class FarmSsh : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(K3_FARM_RISCV_RUNNER))
        << K3_FARM_RISCV_RUNNER
        << " missing: cmake --preset test-rvv-dynamic && cmake --build build/rvv-dynamic";
    ASSERT_TRUE(fs::exists("/usr/sbin/sshd")) << "sshd missing: bash scripts/setup.sh";
  }
  void start(int boards, const std::string& extra = "") {
    lab_ = std::make_unique<LoopbackFarm>(boards);
    farm_file_ = lab_->write_farm(K3_FARM_RISCV_RUNNER, extra);
  }
  std::unique_ptr<k3farm::Farm> farm(k3store::Connection* db = nullptr,
                                     const std::string& run = "run-1") const {
    return std::make_unique<k3farm::Farm>(k3farm::load_farm(farm_file_), K3TUNE_ROOT, db, run);
  }
  std::string db_path() const { return lab_->dir() / "results.db"; }
  struct Cmd {
    int code;
    std::string out, err;
  };
  Cmd k3tune(std::vector<std::string> args) const {
    std::vector<std::string> argv{K3TUNE_PATH, "--root", K3TUNE_ROOT, "--db", db_path()};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto r = k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(300));
    return {r.signal ? 128 + r.signal : r.exit_code, r.out, r.err};
  }
  std::unique_ptr<LoopbackFarm> lab_;
  std::string farm_file_;
};

TEST_F(FarmSsh, DeployOncePerBuildHashAndReplaceACorruptedRunner) {
  start(1);
  auto f = farm();
  auto& b = f->board("b1");
  const auto first = b.deploy(K3_FARM_RISCV_RUNNER);
  EXPECT_TRUE(first.copied);
  EXPECT_EQ(first.why, "absent");
  EXPECT_EQ(first.remote_path, lab_->work_dir("b1") + "/runners/k3bench-" + first.sha256);
  EXPECT_EQ(k3farm::sha256_file(first.remote_path), first.sha256);
  // One shared connection (ControlMaster) carries every command to the board.
  EXPECT_EQ(std::distance(fs::directory_iterator(lab_->control_dir()), fs::directory_iterator()),
            1);
  const auto mtime = fs::last_write_time(first.remote_path);
  const auto second = b.deploy(K3_FARM_RISCV_RUNNER);
  EXPECT_FALSE(second.copied);
  EXPECT_EQ(fs::last_write_time(first.remote_path), mtime);
  // The binary on the board is damaged: the check on the board sees it and copies it again.
  {
    std::fstream damage(first.remote_path, std::ios::in | std::ios::out | std::ios::binary);
    damage.seekp(4096);
    damage.write("\xde\xad\xbe\xef", 4);
  }
  ASSERT_NE(k3farm::sha256_file(first.remote_path), first.sha256);
  const auto third = b.deploy(K3_FARM_RISCV_RUNNER);
  EXPECT_TRUE(third.copied);
  EXPECT_EQ(third.why.rfind("sha256 mismatch (board had ", 0), 0u) << third.why;
  EXPECT_EQ(k3farm::sha256_file(first.remote_path), first.sha256);
  // No partial copies are left behind, and the runner really runs there.
  EXPECT_EQ(std::distance(fs::directory_iterator(lab_->work_dir("b1") + "/runners"),
                          fs::directory_iterator()),
            1);
  const auto r = f->run("b1", kTinyDecode, 300);
  ASSERT_TRUE(r.ok()) << r.reason << r.process.err;
  const auto j = nlohmann::json::parse(r.process.out);
  EXPECT_EQ(j["environment"]["vlenb"], 128);
  EXPECT_EQ(j["repetitions"].size(), 2u);
}

TEST_F(FarmSsh, HostileStringsArriveIntactAndExecuteNothing) {
  // Board "echo" prints its environment entry and every argv word it gets, NUL-separated, in place
  // of running a runner: the whole run path (wrapper, timeout, env, exec prefix) is under test.
  start(1);
  std::ofstream(farm_file_, std::ios::app)
      << "\n[boards.echo]\nport = " << lab_->sshd(1).port() << "\nwork_dir = \""
      << lab_->work_dir("echo") << "\"\nexec_prefix = [\"sh\", \"-c\", "
      << "\"printf '%s\\\\0' \\\"$K3BENCH_HOSTILE\\\" \\\"$@\\\"\", \"echo-prefix\"]\n";
  const std::string canary = lab_->dir() / "canary";
  std::vector<std::string> hostile = {"it's",
                                      "\"dq\"",
                                      "a;touch " + canary,
                                      "$(touch " + canary + ")",
                                      "`touch " + canary + "`",
                                      "x\ny;touch " + canary,
                                      "-rf",
                                      "--op",
                                      "*",
                                      "$HOME",
                                      "back\\slash",
                                      "",
                                      "'; touch " + canary + " #"};
  const std::string hostile_env = "v'$(touch " + canary + ")`id`\n;x";
  setenv("K3BENCH_HOSTILE", hostile_env.c_str(), 1);
  auto f = farm();
  f->board("echo").deploy(K3_FARM_RISCV_RUNNER);
  const auto r = f->run("echo", hostile, 60);
  unsetenv("K3BENCH_HOSTILE");
  ASSERT_TRUE(r.ok()) << r.reason << r.process.err;
  std::vector<std::string> got;
  std::size_t pos = 0;
  for (auto nul = r.process.out.find('\0'); nul != std::string::npos;
       nul = r.process.out.find('\0', pos)) {
    got.push_back(r.process.out.substr(pos, nul - pos));
    pos = nul + 1;
  }
  ASSERT_EQ(got.size(), hostile.size() + 2);
  EXPECT_EQ(got[0], hostile_env);  // K3BENCH_* reached the board-side process intact
  EXPECT_EQ(got[1], f->board("echo").deployed()->remote_path);
  EXPECT_EQ(std::vector<std::string>(got.begin() + 2, got.end()), hostile);
  // Plain commands as well, and a hostile op name through the real riscv64 runner.
  const auto e = f->board("b1").exec({"printf", "%s|", hostile[2], hostile[3], hostile[5]}, 30);
  EXPECT_EQ(e.out, hostile[2] + "|" + hostile[3] + "|" + hostile[5] + "|");
  f->board("b1").deploy(K3_FARM_RISCV_RUNNER);
  const auto op = f->run("b1", {"--op", hostile[3]}, 120);
  EXPECT_EQ(op.fault, k3farm::Fault::kCell);
  EXPECT_EQ(op.process.exit_code, 2);
  EXPECT_NE(op.process.err.find("unknown op '" + hostile[3] + "'"), std::string::npos)
      << op.process.err;
  EXPECT_FALSE(fs::exists(canary));
}

TEST_F(FarmSsh, ChangedOrUnknownHostKeyIsRefusedAndNothingRuns) {
  start(2);
  const std::string canary = lab_->dir() / "ran";
  const std::string kh = lab_->known_hosts();
  {
    auto f = farm();
    ASSERT_TRUE(f->board("b1").exec({"true"}, 30).ok());  // known key: fine
  }  // ~Farm closes the shared connections, so the next command makes a new one
  const std::string b1_old_key = lab_->sshd(1).known_hosts_line();
  lab_->sshd(1).kill_all();
  lab_->sshd(1).new_host_key();
  lab_->sshd(1).start();       // b1 answers with a new key on the same port
  write_file(kh, b1_old_key);  // ... known_hosts still has the old one; b2 is not in it
  auto f = farm();
  const auto r1 = f->board("b1").exec({"touch", canary}, 30);
  std::string why;
  EXPECT_EQ(f->board("b1").classify(r1, &why), k3farm::Fault::kHostKey);
  EXPECT_EQ(why, "board b1: host key of 127.0.0.1:" + std::to_string(lab_->sshd(1).port()) +
                     " changed (does not match " + kh + "); refusing to connect, nothing ran");
  const auto r2 = f->board("b2").exec({"touch", canary}, 30);
  EXPECT_EQ(f->board("b2").classify(r2, &why), k3farm::Fault::kHostKey);
  EXPECT_EQ(why, "board b2: host key of 127.0.0.1:" + std::to_string(lab_->sshd(2).port()) +
                     " is not in " + kh + " (unknown host); refusing to connect, nothing ran");
  EXPECT_FALSE(f->prepare("b2"));
  EXPECT_EQ(f->quarantined_boards().at("b2").fault, k3farm::Fault::kHostKey);
  // The CLI: one line, non-zero exit, and still nothing ran on the board.
  const auto cli = k3tune({"farm", "--farm", farm_file_, "probe", "--board", "b1"});
  EXPECT_EQ(cli.code, 1);
  EXPECT_EQ(std::count(cli.out.begin(), cli.out.end(), '\n'), 1) << cli.out;
  EXPECT_NE(cli.out.find("QUARANTINED (host-key): board b1: host key of 127.0.0.1:"),
            std::string::npos)
      << cli.out << cli.err;
  EXPECT_FALSE(fs::exists(canary));
  EXPECT_FALSE(fs::exists(lab_->work_dir("b1")));
}

TEST_F(FarmSsh, RunnerTimeoutKillsTheBoardSideGroupAndTheRunGoesOn) {
  start(2);
  auto db = k3store::open_database(db_path(), k3store::OpenMode::kCreateOrUpdate);
  auto f = farm(db.get(), "run-timeout");
  ASSERT_TRUE(f->prepare("b1")) << f->quarantined_boards()["b1"].reason;
  ASSERT_TRUE(f->prepare("b2")) << f->quarantined_boards()["b2"].reason;
  const std::vector<std::string> hung = {"--op",   "linear_decode", "--shape",    "n=96,k=256",
                                         "--reps", "1000",          "--min-time", "1000"};
  const std::string runners = lab_->work_dir("b1") + "/runners";
  auto r = f->run("b1", hung, 3);
  EXPECT_EQ(r.fault, k3farm::Fault::kRunnerTimeout) << r.reason << r.process.err;
  EXPECT_EQ(r.reason, "timeout: no exit after 3 s (process group killed on the board)");
  EXPECT_LT(r.process.wall_ns, 15e9);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(processes_mentioning(runners), std::vector<pid_t>{});  // qemu and the runner are gone
  for (const auto& e : fs::directory_iterator(lab_->work_dir("b1")))
    EXPECT_EQ(e.path().extension(), "") << "left behind: " << e.path();  // no run-*.pid
  auto v = f->judge("b1", r);
  EXPECT_FALSE(v.board_fault);
  EXPECT_FALSE(v.quarantined);
  // The run goes on: the other board measures; then a second timeout in a row takes b1 out.
  const auto ok = f->run("b2", kTinyDecode, 300);
  ASSERT_TRUE(ok.ok()) << ok.reason;
  EXPECT_FALSE(f->judge("b2", ok).quarantined);
  v = f->judge("b1", f->run("b1", hung, 2));
  EXPECT_TRUE(v.quarantined);
  EXPECT_EQ(f->healthy_boards(), std::vector<std::string>{"b2"});
  EXPECT_EQ(db->scalar_int("SELECT count(*) FROM farm_quarantine WHERE run_uuid = 'run-timeout' "
                           "AND board = 'b1' AND fault = 'repeated-timeouts'"),
            1);
  EXPECT_EQ(processes_mentioning(runners), std::vector<pid_t>{});
}

TEST_F(FarmSsh, WhenTheBoardSideTimeoutCannotActTheControllerKillsTheGroup) {
  start(1);
  auto f = farm();
  f->board("b1").deploy(K3_FARM_RISCV_RUNNER);
  const std::string runners = lab_->work_dir("b1") + "/runners";
  // The board-side `timeout` and the runner are frozen (SIGSTOP) before the 2 s limit: only the
  // controller's own deadline and its kill of the recorded process group can end the run.
  auto pending = std::async(std::launch::async, [&] {
    return f->run(
        "b1",
        {"--op", "linear_decode", "--shape", "n=96,k=256", "--reps", "1000", "--min-time", "1000"},
        2);
  });
  std::vector<pid_t> frozen;  // the board-side `timeout` and the qemu running the runner
  for (int i = 0; i < 100 && frozen.size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    frozen.clear();
    for (pid_t p : processes_mentioning(runners)) {
      const std::string comm = read_file("/proc/" + std::to_string(p) + "/comm");
      if (comm.rfind("timeout", 0) == 0 || comm.rfind("qemu", 0) == 0) frozen.push_back(p);
    }
  }
  ASSERT_EQ(frozen.size(), 2u);
  for (pid_t p : frozen) kill(p, SIGSTOP);
  const auto r = pending.get();
  EXPECT_EQ(r.fault, k3farm::Fault::kRunnerTimeout) << r.reason;
  EXPECT_EQ(r.reason.rfind("timeout: no result after ", 0), 0u) << r.reason;
  EXPECT_NE(r.reason.find("killed on the board"), std::string::npos) << r.reason;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(processes_mentioning(runners), std::vector<pid_t>{});
}

// A miniature of the sweep's loop over the public API: cells go to healthy boards; a board fault
// puts the cell back in the queue for another board; every finished process is committed at once.
class CellLoop {
 public:
  CellLoop(k3farm::Farm& farm, k3store::Connection& db, const std::string& run,
           const std::string& build)
      : farm_(farm), db_(db), run_(run), build_(build) {}

  // Runs `args` on `board`; stores process + samples on success. Returns the verdict.
  k3farm::Verdict run_on(const std::string& board, const std::vector<std::string>& args) {
    const auto r = farm_.run(board, args, 300);
    const auto v = farm_.judge(board, r);
    if (v.board_fault) return v;  // nothing is stored for a process the board lost
    std::string key = board;
    for (const auto& a : args) key += " " + a;
    k3store::insert_cell(db_, {key, board, "linear_decode", "{}", "{}", build_, "{}"});
    k3store::ProcessRecord p;
    p.run_uuid = run_;
    p.cell_key = key;
    p.order_index = order_++;
    p.ok = r.ok();
    p.exit_code = r.process.exit_code;
    p.reason = r.reason;
    p.wall_ns = r.process.wall_ns;
    if (r.ok()) {
      const auto result = nlohmann::json::parse(r.process.out);
      for (const auto& rep : result["repetitions"])
        p.samples.push_back({rep["ns"].get<double>(),
                             rep["cpu_ns"].get<double>(),
                             rep["iterations"].get<std::int64_t>(),
                             {},
                             false,
                             {}});
    }
    k3store::insert_process(db_, p);
    return v;
  }

 private:
  k3farm::Farm& farm_;
  k3store::Connection& db_;
  std::string run_, build_;
  int order_ = 0;
};

std::vector<std::string> decode_cell(int n, int reps, const std::string& min_time = "") {
  std::vector<std::string> a = {"--op",     "linear_decode",
                                "--shape",  "n=" + std::to_string(n) + ",k=256",
                                "--params", "workers=2,copies=1",
                                "--reps",   std::to_string(reps),
                                "--warmup", "0",
                                "--json"};
  if (min_time.empty())
    a.insert(a.end(), {"--iterations", "2"});
  else
    a.insert(a.end(), {"--min-time", min_time});
  return a;
}

TEST_F(FarmSsh, BoardDiesMidRunItsCellMovesAndNoSampleIsLost) {
  start(2);
  auto db = k3store::open_database(db_path(), k3store::OpenMode::kCreateOrUpdate);
  const std::string run = "run-dies";
  auto f = farm(db.get(), run);
  for (const char* b : {"b1", "b2"}) {
    f->lease(b);
    ASSERT_TRUE(f->prepare(b)) << f->quarantined_boards()[b].reason;
  }
  const std::string build = f->board("b1").deployed()->sha256;
  k3store::upsert_build(*db, {build, "rvv-dynamic", K3_FARM_RISCV_RUNNER, "clang", "", "{}", "test",
                              std::nullopt, "runner report"});
  k3store::insert_run(*db, {run, "farm test", "loopback", build, "localhost", "[]", 1, 3, 0});
  CellLoop loop(*f, *db, run, build);
  auto samples = [&] { return db->scalar_int("SELECT count(*) FROM samples"); };
  // Four cells, two per board, all measured.
  for (int i = 0; i < 4; ++i)
    ASSERT_FALSE(loop.run_on(i % 2 ? "b2" : "b1", decode_cell(64 + 32 * i, 3)).board_fault);
  const auto before = samples();
  ASSERT_EQ(before, 12) << db->scalar_int("SELECT count(*) FROM processes") << " processes, "
                        << db->scalar_int("SELECT count(*) FROM processes WHERE status = 'ok'")
                        << " ok";
  // A long cell on b1 (4 repetitions of at least 1.5 s each: still running when the board dies
  // 3 s in, however fast the machine); b1 dies (sshd and everything it started) while it runs.
  const auto long_cell = decode_cell(64, 4, "1.5");
  auto pending = std::async(std::launch::async, [&] { return f->run("b1", long_cell, 300); });
  std::this_thread::sleep_for(std::chrono::seconds(3));
  lab_->sshd(1).kill_all();
  const auto lost = pending.get();
  EXPECT_EQ(lost.fault, k3farm::Fault::kUnreachable) << lost.reason;
  const auto v = f->judge("b1", lost);
  EXPECT_TRUE(v.board_fault);
  EXPECT_TRUE(f->quarantined("b1"));
  EXPECT_EQ(samples(), before);  // what was measured is still there
  // The cell moves to the healthy board, and so do the cells not started yet.
  ASSERT_EQ(f->healthy_boards(), std::vector<std::string>{"b2"});
  EXPECT_FALSE(loop.run_on("b2", long_cell).board_fault);
  EXPECT_FALSE(loop.run_on("b2", decode_cell(192, 3)).board_fault);
  EXPECT_EQ(samples(), before + 4 + 3);
  EXPECT_EQ(db->scalar_int("SELECT count(*) FROM samples s JOIN cells c USING(cell_key) "
                           "WHERE c.target = 'b1'"),
            6);
  EXPECT_EQ(db->scalar_int("SELECT count(*) FROM farm_quarantine WHERE run_uuid = 'run-dies' AND "
                           "board = 'b1' AND fault = 'unreachable'"),
            1);
  const auto reason = k3store::quarantine_rows(*db, run).at(0).reason;
  EXPECT_EQ(reason.rfind("board b1: unreachable: ", 0), 0u) << reason;
  // A later probe of the dead board says so in one line.
  const auto h = f->board("b1").probe();
  EXPECT_FALSE(h.ok);
  EXPECT_EQ(h.error.rfind("board b1: unreachable: ", 0), 0u) << h.error;
}

TEST_F(FarmSsh, RebootBetweenProbesQuarantinesTheBoard) {
  start(2);
  // b2 does not honour test hooks: the same hook file must change nothing there.
  std::string text = read_file(farm_file_);
  text.replace(text.find("test_hooks = true", text.find("[boards.b2]")), 17, "test_hooks = false");
  write_file(farm_file_, text);
  auto db = k3store::open_database(db_path(), k3store::OpenMode::kCreateOrUpdate);
  auto f = farm(db.get(), "run-reboot");
  ASSERT_TRUE(f->prepare("b1"));
  ASSERT_TRUE(f->prepare("b2"));
  long long uptime = 0;
  std::ifstream("/proc/uptime") >> uptime;
  for (const char* b : {"b1", "b2"}) {
    fs::create_directories(lab_->work_dir(b) + "/test-hooks");
    write_file(lab_->work_dir(b) + "/test-hooks/uptime_offset_s", std::to_string(5 - uptime));
  }
  const auto c1 = f->recheck("b1");
  EXPECT_TRUE(c1.rebooted);
  EXPECT_TRUE(f->quarantined("b1"));
  EXPECT_EQ(f->quarantined_boards().at("b1").fault, k3farm::Fault::kRebooted);
  const auto c2 = f->recheck("b2");
  EXPECT_TRUE(c2.clean()) << (c2.reasons.empty() ? "" : c2.reasons[0]);
  EXPECT_FALSE(f->quarantined("b2"));
  EXPECT_EQ(db->scalar_int(
                "SELECT count(*) FROM farm_quarantine WHERE board = 'b1' AND fault = 'rebooted'"),
            1);
  EXPECT_EQ(db->scalar_int("SELECT count(*) FROM farm_probes WHERE run_uuid = 'run-reboot'"), 4);
}

TEST_F(FarmSsh, StaleLeaseIsReportedAndRecoveredOnlyOnRequest) {
  start(1);
  const std::vector<std::string> base{"farm", "--farm", farm_file_};
  auto cli = [&](std::vector<std::string> more) {
    std::vector<std::string> args = base;
    args.insert(args.end(), more.begin(), more.end());
    return k3tune(args);
  };
  auto holder = std::make_unique<k3farm::BackgroundProcess>(
      std::vector<std::string>{K3TUNE_PATH, "--root", K3TUNE_ROOT, "--db", db_path(), "farm",
                               "--farm", farm_file_, "lease", "--board", "b1", "--hold", "600"});
  ASSERT_EQ(holder->read_line(60), std::optional<std::string>("leased b1"))
      << holder->stderr_text();
  k3farm::Farm f(k3farm::load_farm(farm_file_), K3TUNE_ROOT, nullptr, "");
  EXPECT_EQ(k3farm::board_lock_held(f.board("b1")), std::optional<bool>(true));
  auto busy = cli({"lease", "--board", "b1", "--hold", "1"});
  EXPECT_EQ(busy.code, 2);
  EXPECT_NE(busy.err.find("board b1: leased by "), std::string::npos) << busy.err;
  // The holder dies without releasing: its board-side lock goes with its connection, its row stays.
  const pid_t dead = holder->pid();
  kill(dead, SIGKILL);
  for (int i = 0; i < 100 && k3farm::board_lock_held(f.board("b1")) != std::optional<bool>(false);
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto listed = k3tune({"--json", "farm", "--farm", farm_file_, "list"});
  ASSERT_EQ(listed.code, 0) << listed.err;
  const auto lease = nlohmann::json::parse(listed.out)["boards"][0]["lease"];
  EXPECT_EQ(lease["stale"], true);
  EXPECT_EQ(lease["holder_pid"], dead);
  EXPECT_EQ(lease["why"],
            "holder pid " + std::to_string(dead) + " on " + k3farm::this_host() + " is gone");
  // Nothing recovers it implicitly: a new lease is refused with the recovery command ...
  auto refused = cli({"lease", "--board", "b1", "--hold", "1"});
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.err.find("board b1: stale lease of "), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("recover with `k3tune farm release --stale --board b1`"),
            std::string::npos);
  auto plain = cli({"release", "--board", "b1"});
  EXPECT_EQ(plain.code, 2);
  {
    auto db = k3store::open_database(db_path(), k3store::OpenMode::kReadOnly);
    EXPECT_EQ(db->scalar_int("SELECT holder_pid FROM farm_leases WHERE board = 'b1'"), dead);
  }
  // ... only the explicit command does.
  auto recovered = cli({"release", "--stale"});
  EXPECT_EQ(recovered.code, 0) << recovered.err;
  EXPECT_NE(recovered.out.find("board b1: stale lease of "), std::string::npos) << recovered.out;
  EXPECT_NE(recovered.out.find(" removed"), std::string::npos) << recovered.out;
  listed = k3tune({"--json", "farm", "--farm", farm_file_, "list"});
  EXPECT_TRUE(nlohmann::json::parse(listed.out)["boards"][0]["lease"].is_null());
  auto again = cli({"lease", "--board", "b1", "--hold", "1"});
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(again.out, "leased b1\nreleased b1\n");
}

TEST_F(FarmSsh, ProbeCommandReportsBoardsAndTheRealTcmLibraryOnTheBoard) {
  start(2);
  ASSERT_TRUE(fs::exists(K3_FARM_RISCV_TCM_DOUBLE)) << K3_FARM_RISCV_TCM_DOUBLE;
  // b2 gets the riscv64 TCM test double as its "vendor library" through the board's settings.
  std::string text = read_file(farm_file_);
  text.insert(text.find("\n", text.find("[boards.b2]")) + 1,
              "env = { K3_TCM_LIBRARY = \"" + std::string(K3_FARM_RISCV_TCM_DOUBLE) + "\" }\n");
  write_file(farm_file_, text);
  auto probe = k3tune({"--json", "farm", "--farm", farm_file_, "probe"});
  ASSERT_EQ(probe.code, 0) << probe.out << probe.err;
  auto j = nlohmann::json::parse(probe.out);
  ASSERT_EQ(j["boards"].size(), 2u);
  for (const auto& b : j["boards"]) {
    EXPECT_EQ(b["ok"], true);
    EXPECT_EQ(b["deploy"]["copied"], true);
    EXPECT_EQ(b["probe"]["vlenb"], 128);
    EXPECT_GT(b["probe"]["uptime_s"].get<long long>(), 0);
    EXPECT_GT(b["probe"]["mem_available_kb"].get<long long>(), 0);
  }
  EXPECT_EQ(j["boards"][0]["probe"]["tcm_backend"], "emulated");
  EXPECT_EQ(j["boards"][1]["probe"]["tcm_backend"], "real");
  probe = k3tune({"farm", "--farm", farm_file_, "probe", "--board", "b2"});
  ASSERT_EQ(probe.code, 0) << probe.err;
  EXPECT_NE(probe.out.find("b2: ok; runner present (present, sha256 verified on the board)"),
            std::string::npos)
      << probe.out;
  EXPECT_NE(probe.out.find("vlenb 128, TCM real"), std::string::npos) << probe.out;
}

}  // namespace
