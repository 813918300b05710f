// Tuning on farm boards (label farm): `k3tune tune --farm F --board B|--tag T` on the loopback farm
// (two boards, each a real sshd on 127.0.0.1 whose runner is the dynamically linked riscv64 k3bench
// under qemu-user at VLEN 1024, so the instruction objective counts there):
//   - the table's fingerprint is the board's own (VLEN 1024 from its probe, not this x86 host's)
//     and its name the board's; the same command again resumes the finished session: the same
//     table, nothing measured again;
//   - a campaign over both boards (--tag), b1's sshd killed mid-session: b1 leaves the campaign,
//     its session goes back to the queue and b2 resumes it from the stored points (a session's
//     identity holds the fingerprint, not the board's name); nothing is measured twice and the
//     table matches an uninterrupted campaign's up to the counts' jitter;
//   - bad input: --board without --farm, an unknown board, a time objective on an emulated board.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <future>

#include <nlohmann/json.hpp>

#include "farm_test_support.h"
#include "harness/host/bench/child_output.h"
#include "harness/host/store/database.h"

namespace {

using namespace k3farm_test;

class FarmSshTune : public LoopbackFarmTest {
 protected:
  Cmd k3tune(const std::vector<std::string>& args, const std::string& db_path = "") const {
    return run_k3tune(args, db_path);
  }
  // An exact tune of small decode shapes (6 and 4 valid configurations at one worker).
  std::vector<std::string> tune_args(const std::vector<std::string>& where, const std::string& out,
                                     bool two_shapes = false) const {
    std::vector<std::string> a{
        "-q",          "--json",       "tune",       "--farm",        farm_file_,
        "--objective", "instructions", "--op",       "linear_decode", "--shape",
        "n=256,k=256", "--strategy",   "exhaustive", "--out",         out};
    if (two_shapes) a.insert(a.end(), {"--shape", "n=128,k=256"});
    a.insert(a.end(), where.begin(), where.end());
    return a;
  }
  static const nlohmann::json& group(const nlohmann::json& out) { return out.at("groups").at(0); }
  std::int64_t count(const std::string& sql, const std::string& db_path = "") const {
    const std::string path = db_path.empty() ? db() : db_path;
    if (!fs::exists(path)) return 0;
    return k3store::open_database(path, k3store::OpenMode::kReadOnly)->scalar_int(sql);
  }
  static nlohmann::json read_json(const std::string& path) {
    return nlohmann::json::parse(read_file(path));
  }
  // Kills b1's sshd once `sql` counts `rows` or more (polled every 50 ms for 5 minutes at most);
  // whether it did.
  bool kill_b1_once(const std::string& sql, std::int64_t rows) {
    for (int i = 0; i < 6000; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      try {
        if (count(sql) >= rows) {
          lab_->sshd(1).kill_all();
          return true;
        }
      } catch (const std::exception&) {  // the database is being created
      }
    }
    return false;
  }
  // A copy of `runner` with a byte appended: another build hash, the same code.
  static void copy_as_another_build(const fs::path& runner, const fs::path& copy) {
    fs::copy_file(runner, copy);
    std::ofstream(copy, std::ios::app) << "x";
    fs::permissions(copy, fs::perms::owner_all);
  }
};

TEST_F(FarmSshTune, AnExactTuneOnABoardRecordsTheBoardsFingerprintAndRepeatsExactly) {
  const std::string t1 = lab_->dir() / "t1.json", t2 = lab_->dir() / "t2.json";
  const auto first = k3tune(tune_args({"--board", "b2"}, t1));
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  const auto j1 = nlohmann::json::parse(first.out);
  EXPECT_EQ(k3bench::child_output_problems(K3TUNE_ROOT, k3bench::ChildOutput::kTuneFarm, j1),
            std::vector<std::string>{});
  ASSERT_EQ(j1["groups"].size(), 1u) << first.out;
  EXPECT_EQ(group(j1)["boards"], nlohmann::json::array({"b2"}));
  EXPECT_EQ(group(j1)["jobs"][0]["measurements_new"], 0) << first.out;  // the table's pass
  EXPECT_EQ(group(j1)["jobs"][0]["result"]["measurements"], 6) << first.out;
  EXPECT_EQ(count("SELECT count(*) FROM tuning_measurements"), 6);
  const auto table = read_json(t1);
  EXPECT_EQ(table["board"]["name"], "b2");
  // The board's probe: VLEN 1024 under its qemu (this host's own runner has no VLEN at all).
  EXPECT_EQ(table["board"]["fingerprint"]["vlen"], 1024) << table["board"].dump();
  EXPECT_EQ(table["board"]["fingerprint"]["tcm"]["backend"], "emulated") << table["board"].dump();
  EXPECT_EQ(table["source"]["target"], "b2");
  ASSERT_EQ(table["entries"].size(), 1u);
  EXPECT_EQ(table["entries"][0]["class"]["path"], "rvv");  // the layer the board's runner took

  // The table verified on the other board of the same fingerprint (timing under qemu: --force).
  const auto verify =
      k3tune({"-q", "table", "verify", "--table", t1, "--farm", farm_file_, "--board", "b1",
              "--force", "--processes", "2", "-R", "1", "--min-time", "0.01"});
  EXPECT_TRUE(verify.code == 0 || verify.code == 1) << verify.out << verify.err;
  EXPECT_NE(verify.out.find("b1"), std::string::npos) << verify.out;
  EXPECT_EQ(verify.err.find("fingerprint"), std::string::npos) << verify.err;
  // The board was probed (stored) and its lease is released (the row goes with it).
  EXPECT_GE(count("SELECT count(*) FROM farm_probes WHERE board = 'b2' AND ok = 1"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM farm_leases"), 0);

  const auto again = k3tune(tune_args({"--board", "b2"}, t2));
  ASSERT_EQ(again.code, 0) << again.out << again.err;
  const auto j2 = nlohmann::json::parse(again.out);
  EXPECT_EQ(group(j2)["jobs"][0]["resumed"], true);
  EXPECT_EQ(group(j2)["sessions_by_board"]["b2"], 1);
  EXPECT_EQ(count("SELECT count(*) FROM tuning_measurements"), 6);  // nothing measured again
  EXPECT_EQ(read_json(t2)["entries"], table["entries"]);
  EXPECT_EQ(read_json(t2)["board"], table["board"]);
}

TEST_F(FarmSshTune, ABoardLostMidCampaignHandsItsSessionToAnotherBoardOfItsFingerprint) {
  const std::string t1 = lab_->dir() / "t1.json";
  auto running = std::async(std::launch::async, [&] {
    return k3tune(tune_args({"--tag", "qemu"}, t1, true));
  });
  // Both boards tune (one session each); b1 is killed once three points are stored, so its
  // session is unfinished (6 points) or not begun.
  const bool killed = kill_b1_once("SELECT count(*) FROM tuning_measurements", 3);
  const auto r = running.get();
  ASSERT_TRUE(killed) << r.out << r.err;
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& g = group(j);
  EXPECT_EQ(g["boards"], nlohmann::json::array({"b1", "b2"}));
  EXPECT_TRUE(g["lost"].contains("b1")) << g.dump();
  EXPECT_EQ(g["unfinished"].size(), 0u) << g.dump();
  EXPECT_EQ(g["sessions_by_board"]["b2"], 2) << g.dump();  // its own and b1's
  // Every point once: the resumed session measured only what b1 had not stored.
  EXPECT_EQ(count("SELECT count(*) FROM tuning_measurements"), 6 + 4);
  const auto table = read_json(t1);
  EXPECT_EQ(table["board"]["name"], "b2");
  ASSERT_EQ(table["entries"].size(), 2u);
  std::printf("campaign over b1, b2: b1 lost (%s); b2 finished both sessions\n",
              g["lost"]["b1"].get<std::string>().c_str());

  // An uninterrupted campaign on b2 alone (its own database) makes the same table up to the
  // counts' jitter: the configurations here differ by tens of instructions, about what one count
  // varies, so the winner may differ where two are that close, and the winners' counts then
  // differ by up to two jitters (seen: tile_n 128 at 2,661 against tile_n 64 at 2,612, 1.9%).
  const std::string other = lab_->dir() / "other.db", t2 = lab_->dir() / "t2.json";
  const auto whole = k3tune(tune_args({"--board", "b2"}, t2, true), other);
  ASSERT_EQ(whole.code, 0) << whole.out << whole.err;
  const auto other_table = read_json(t2);
  EXPECT_EQ(other_table["board"]["fingerprint"], table["board"]["fingerprint"]);
  ASSERT_EQ(other_table["entries"].size(), 2u);
  const auto jobs_a = g["jobs"], jobs_b = group(nlohmann::json::parse(whole.out))["jobs"];
  for (std::size_t i = 0; i < 2; ++i) {
    const double a = jobs_a[i]["result"]["evidence"]["mean_ns"].get<double>();
    const double b = jobs_b[i]["result"]["evidence"]["mean_ns"].get<double>();
    EXPECT_NEAR(a, b, 0.03 * a) << jobs_a[i].dump() << "\n" << jobs_b[i].dump();
    EXPECT_EQ(other_table["entries"][i]["class"], table["entries"][i]["class"]);
  }
}

// `count` on a board: the board's runner under the board's own qemu (its VLEN, its -L), counted on
// the board, stored as a count run like any other.
TEST_F(FarmSshTune, CountOnABoardCountsItsRunnerAtItsVlen) {
  const auto r = k3tune({"-q", "--json", "count", "--farm", farm_file_, "--board", "b1", "--case",
                         "linear_decode n=64,k=256"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto rows = nlohmann::json::parse(r.out);
  ASSERT_EQ(rows.size(), 1u) << r.out;
  EXPECT_EQ(rows[0]["vlen"], 1024);
  EXPECT_EQ(rows[0]["path"], "rvv");
  EXPECT_GT(rows[0]["instructions_per_call"].get<double>(), 64 * 256 / 64)
      << rows.dump();  // >= 1 per block
  EXPECT_EQ(count("SELECT count(*) FROM runs WHERE run_uuid = '" +
                  rows[0]["run_uuid"].get<std::string>() + "'"),
            1);
  const auto bad = k3tune({"count", "--farm", farm_file_, "--board", "b1", "--vlens", "256"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err, "k3tune: --vlens: a board counts at its own VLEN (its exec prefix)\n");
}

// Ctrl-C or SIGTERM during a farm command releases its leases on the way out: the next command
// takes the boards at once, no `farm release --stale` needed.
TEST_F(FarmSshTune, AnInterruptedCommandLeavesNoLeaseBehind) {
  std::vector<std::string> argv{K3TUNE_PATH, "--root", K3TUNE_ROOT, "--db", db()};
  for (const auto& a : tune_args({"--tag", "qemu"}, lab_->dir() / "t.json")) argv.push_back(a);
  const pid_t pid = k3targets::spawn_in_group(argv, -1, -1, -1);
  ASSERT_GT(pid, 0);
  bool leased = false;
  for (int i = 0; i < 600 && !leased; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    try {
      leased = count("SELECT count(*) FROM farm_leases") == 2;
    } catch (const std::exception&) {  // the database is being created
    }
  }
  ASSERT_TRUE(leased);
  kill(pid, SIGTERM);
  int st = 0;
  waitpid(pid, &st, 0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGTERM) << st;
  EXPECT_EQ(count("SELECT count(*) FROM farm_leases"), 0);
  const auto next = k3tune(
      {"-q", "count", "--farm", farm_file_, "--board", "b1", "--case", "linear_decode n=64,k=64"});
  EXPECT_EQ(next.code, 0) << next.err;
}

// A paired A/B on one board (bench --farm --board --baseline-runner): last night's runner is
// installed next to tonight's and both are measured there; the board's sshd killed mid-way ends
// the command with exit 3, the processes measured stay and the run says it was cut short.
TEST_F(FarmSshTune, AnABOnABoardLostMidWayKeepsItsProcessesAndIsMarkedInterrupted) {
  const std::string baseline = lab_->dir() / "k3bench-yesterday";
  copy_as_another_build(K3_FARM_RISCV_RUNNER, baseline);
  auto running = std::async(std::launch::async, [&] {
    return k3tune({"-q",
                   "bench",
                   "--farm",
                   farm_file_,
                   "--board",
                   "b1",
                   "--baseline-runner",
                   baseline,
                   "--op",
                   "linear_decode",
                   "--params",
                   "workers=1,copies=1",
                   "--shape",
                   "n=64,k=256",
                   "--shape",
                   "n=128,k=256",
                   "-P",
                   "3",
                   "--target-ci",
                   "0",
                   "--warmup",
                   "0",
                   "-R",
                   "3",
                   "--min-time",
                   "0.4"});
  });
  const bool killed = kill_b1_once("SELECT count(*) FROM processes WHERE status = 'ok'", 2);
  const auto r = running.get();
  ASSERT_TRUE(killed) << r.out << r.err;
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("b1"), std::string::npos) << r.err;
  // Both builds were measured on the board (the baseline installed there by its hash).
  EXPECT_EQ(
      count(
          "SELECT count(DISTINCT c.build_hash) FROM processes p JOIN cells c USING(cell_key) WHERE "
          "p.status = 'ok'"),
      2);
  EXPECT_EQ(count("SELECT count(*) FROM runs WHERE status = 'interrupted'"), 1);
  EXPECT_GE(count("SELECT count(*) FROM samples"), 2);
  EXPECT_TRUE(fs::exists(lab_->work_dir("b1") + "/runners"));
}

TEST_F(FarmSshTune, BadPlacesAreOneLineAndWriteNothing) {
  const std::string t = lab_->dir() / "t.json";
  const auto no_farm =
      k3tune({"tune", "--board", "b1", "--op", "linear_decode", "--shape", "n=64,k=64"});
  EXPECT_EQ(no_farm.code, 2);
  EXPECT_NE(no_farm.err.find("--board requires --farm"), std::string::npos) << no_farm.err;
  const auto unknown = k3tune(tune_args({"--board", "b9"}, t));
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("b9"), std::string::npos) << unknown.err;
  const auto both = k3tune({"tune", "--target", "local", "--farm", farm_file_, "--board", "b1",
                            "--op", "linear_decode", "--shape", "n=64,k=64"});
  EXPECT_EQ(both.code, 2);
  EXPECT_EQ(both.err, "k3tune: --target and --farm: measure on one or the other\n");
  // A time objective on a qemu board is refused (its wall time says nothing about a K3).
  const auto timed = k3tune({"tune", "--farm", farm_file_, "--board", "b1", "--op", "linear_decode",
                             "--shape", "n=64,k=64", "--out", t});
  EXPECT_EQ(timed.code, 2) << timed.out << timed.err;
  EXPECT_NE(timed.err.find("qemu-user"), std::string::npos) << timed.err;
  EXPECT_FALSE(fs::exists(t));
  EXPECT_EQ(count("SELECT count(*) FROM tuning_sessions"), 0);
}

}  // namespace

namespace {

// The same A/B on a board whose baseline carries its kernel plugin: the plugin is installed on
// the board by its hash next to the runners, the board's runner loads it, and each runner process
// measures both builds (the dynamically linked riscv64 runner under the board's qemu).
TEST_F(FarmSshTune, AnABOnABoardPairsBothBuildsInsideEachProcessWhenThePluginLoads) {
  const fs::path tree = lab_->dir() / "yesterday";
  fs::create_directories(tree);
  copy_as_another_build(K3_FARM_RISCV_RUNNER, tree / "k3bench");
  const fs::path plugin = fs::path(K3_FARM_RISCV_RUNNER).parent_path() / "libk3bench_plugin.so";
  ASSERT_TRUE(fs::exists(plugin)) << plugin;  // the rvv-dynamic preset builds it
  fs::copy_file(plugin, tree / "libk3bench_plugin.so");
  const auto r = k3tune(with_args(
      with_args({"-q", "--json", "bench", "--farm", farm_file_, "--board", "b1",
                 "--baseline-runner", (tree / "k3bench").string(), "--op", "linear_decode",
                 "--params", "workers=1,copies=1", "--shape", "n=64,k=256"},
                tiny_process_plan()),
      {"-R", "2", "--iterations", "1"}));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto pairing = nlohmann::json::parse(r.out).at("build_pairing");
  EXPECT_EQ(pairing["design"], "within-process") << pairing;
  // Installed on the board under its own hash, and that path is what the runner loaded.
  const std::string remote = pairing["plugin"];
  EXPECT_EQ(remote.rfind(lab_->work_dir("b1") + "/runners/k3bench-", 0), 0u) << remote;
  EXPECT_TRUE(fs::exists(remote)) << remote;
  EXPECT_EQ(count("SELECT count(*) FROM processes WHERE status = 'ok'"), 4);
  EXPECT_EQ(count("SELECT count(DISTINCT order_index) FROM processes"), 2);
  EXPECT_EQ(count("SELECT count(*) FROM processes WHERE json_extract(runner_json, "
                  "'$.within_process.side') = 'B' AND json_extract(runner_json, "
                  "'$.accuracy.pass') = 1"),
            1);  // the first process checks both sides
}

}  // namespace
