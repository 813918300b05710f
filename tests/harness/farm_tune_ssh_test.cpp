// Tuning on farm boards (label farm): `k3tune tune --farm F --board B|--tag T` on the loopback farm
// (two boards, each a real sshd on 127.0.0.1 whose runner is the dynamically linked riscv64 k3bench
// under qemu-user at VLEN 1024, so the instruction objective counts there):
//   - the table's fingerprint is the board's own (VLEN 1024 from its probe, not this x86 host's)
//     and its name the board's; the same command again resumes the finished session: the same
//     table, nothing measured again;
//   - a board whose sshd is killed mid-tune ends the command (exit 3, the measurements kept); the
//     same command with --tag takes the other board, which resumes the session from the stored
//     points (its identity holds the fingerprint, not the board's name);
//   - bad input: --board without --farm, an unknown board, a time objective on an emulated board.
#include <gtest/gtest.h>

#include <future>

#include <nlohmann/json.hpp>

#include "harness/host/store/database.h"
#include "farm_test_support.h"

namespace {

using namespace k3farm_test;

class FarmSshTune : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(K3_FARM_RISCV_RUNNER)) << K3_FARM_RISCV_RUNNER << " missing";
    lab_ = std::make_unique<LoopbackFarm>(2);
    farm_file_ = lab_->write_farm(K3_FARM_RISCV_RUNNER);
  }
  std::string db() const { return lab_->dir() / "results.db"; }
  struct Cmd {
    int code;
    std::string out, err;
  };
  Cmd k3tune(std::vector<std::string> args, const std::string& db_path = "") const {
    std::vector<std::string> argv{K3TUNE_PATH, "--root", K3TUNE_ROOT, "--db",
                                  db_path.empty() ? db() : db_path};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto r = k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(900));
    return {r.signal ? 128 + r.signal : r.exit_code, r.out, r.err};
  }
  // An exact tune of one small decode shape (6 valid configurations at one worker).
  std::vector<std::string> tune_args(const std::vector<std::string>& where,
                                     const std::string& out) const {
    std::vector<std::string> a{"-q",          "--json",        "tune",         "--farm",
                               farm_file_,    "--objective",   "instructions", "--op",
                               "linear_decode", "--shape",      "n=256,k=1024", "--strategy",
                               "exhaustive",  "--out",         out};
    a.insert(a.end(), where.begin(), where.end());
    return a;
  }
  std::int64_t count(const std::string& sql, const std::string& db_path = "") const {
    const std::string path = db_path.empty() ? db() : db_path;
    if (!fs::exists(path)) return 0;
    return k3store::open_database(path, k3store::OpenMode::kReadOnly)->scalar_int(sql);
  }
  static nlohmann::json read_json(const std::string& path) {
    return nlohmann::json::parse(read_file(path));
  }
  std::unique_ptr<LoopbackFarm> lab_;
  std::string farm_file_;
};

TEST_F(FarmSshTune, AnExactTuneOnABoardRecordsTheBoardsFingerprintAndRepeatsExactly) {
  const std::string t1 = lab_->dir() / "t1.json", t2 = lab_->dir() / "t2.json";
  const auto first = k3tune(tune_args({"--board", "b2"}, t1));
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  const auto j1 = nlohmann::json::parse(first.out);
  EXPECT_EQ(j1["jobs"][0]["measurements_new"], 6) << first.out;
  const auto table = read_json(t1);
  EXPECT_EQ(table["board"]["name"], "b2");
  // The board's probe: VLEN 1024 under its qemu (this host's own runner has no VLEN at all).
  EXPECT_EQ(table["board"]["fingerprint"]["vlen"], 1024) << table["board"].dump();
  EXPECT_EQ(table["board"]["fingerprint"]["tcm"]["backend"], "emulated") << table["board"].dump();
  EXPECT_EQ(table["source"]["target"], "b2");
  ASSERT_EQ(table["entries"].size(), 1u);
  EXPECT_EQ(table["entries"][0]["class"]["path"], "rvv");  // the layer the board's runner took

  // The table verified on the other board of the same fingerprint (timing under qemu: --force).
  const auto verify = k3tune({"-q", "table", "verify", "--table", t1, "--farm", farm_file_,
                              "--board", "b1", "--force", "--processes", "2", "-R", "1",
                              "--min-time", "0.01"});
  EXPECT_TRUE(verify.code == 0 || verify.code == 1) << verify.out << verify.err;
  EXPECT_NE(verify.out.find("b1"), std::string::npos) << verify.out;
  EXPECT_EQ(verify.err.find("fingerprint"), std::string::npos) << verify.err;
  // The board was probed (stored) and its lease is released (the row goes with it).
  EXPECT_GE(count("SELECT count(*) FROM farm_probes WHERE board = 'b2' AND ok = 1"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM farm_leases"), 0);

  const auto again = k3tune(tune_args({"--board", "b2"}, t2));
  ASSERT_EQ(again.code, 0) << again.out << again.err;
  const auto j2 = nlohmann::json::parse(again.out);
  EXPECT_EQ(j2["jobs"][0]["resumed"], true);
  EXPECT_EQ(j2["jobs"][0]["measurements_new"], 0);
  EXPECT_EQ(read_json(t2)["entries"], table["entries"]);
  EXPECT_EQ(read_json(t2)["board"], table["board"]);
}

TEST_F(FarmSshTune, ABoardLostMidTuneLeavesItsPointsAndAnotherBoardResumesTheSession) {
  const std::string t1 = lab_->dir() / "t1.json", t2 = lab_->dir() / "t2.json";
  auto running = std::async(std::launch::async,
                            [&] { return k3tune(tune_args({"--tag", "qemu"}, t1)); });
  // b1 (first in the inventory) takes the session; killed once it has stored two points.
  bool killed = false;
  for (int i = 0; i < 3000 && !killed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    try {
      if (count("SELECT count(*) FROM tuning_measurements") >= 2) {
        lab_->sshd(1).kill_all();
        killed = true;
      }
    } catch (const std::exception&) {  // the database is being created
    }
  }
  const auto lost = running.get();
  ASSERT_TRUE(killed) << lost.out << lost.err;
  ASSERT_EQ(lost.code, 3) << lost.out << lost.err;
  EXPECT_NE(lost.err.find("b1"), std::string::npos) << lost.err;
  EXPECT_FALSE(fs::exists(t1));
  const auto stored = count("SELECT count(*) FROM tuning_measurements");
  ASSERT_GE(stored, 2);
  ASSERT_LT(stored, 6) << "the kill landed after the session had finished";

  const auto resumed = k3tune(tune_args({"--tag", "qemu"}, t2));
  ASSERT_EQ(resumed.code, 0) << resumed.out << resumed.err;
  const auto j = nlohmann::json::parse(resumed.out);
  EXPECT_EQ(j["jobs"][0]["resumed"], true);
  EXPECT_EQ(j["jobs"][0]["measurements_new"], 6 - stored) << resumed.out;
  const auto table = read_json(t2);
  EXPECT_EQ(table["board"]["name"], "b2");
  std::printf("b1 killed after %lld of 6 points; b2 measured the other %lld\n",
              static_cast<long long>(stored), static_cast<long long>(6 - stored));

  // An uninterrupted tune on b2 (its own database) finds the same best up to the counts' jitter:
  // the configurations of this space differ by tens of instructions, about what one count varies.
  const std::string other = lab_->dir() / "other.db", t3 = lab_->dir() / "t3.json";
  const auto whole = k3tune(tune_args({"--board", "b2"}, t3), other);
  ASSERT_EQ(whole.code, 0) << whole.out << whole.err;
  const auto best = [](const nlohmann::json& out) {
    return out["jobs"][0]["result"]["evidence"]["mean_ns"].get<double>();
  };
  EXPECT_NEAR(best(j), best(nlohmann::json::parse(whole.out)), 0.01 * best(j));
  EXPECT_EQ(read_json(t3)["board"]["fingerprint"], table["board"]["fingerprint"]);
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
  const auto timed = k3tune({"tune", "--farm", farm_file_, "--board", "b1", "--op",
                             "linear_decode", "--shape", "n=64,k=64", "--out", t});
  EXPECT_EQ(timed.code, 2) << timed.out << timed.err;
  EXPECT_NE(timed.err.find("qemu-user"), std::string::npos) << timed.err;
  EXPECT_FALSE(fs::exists(t));
  EXPECT_EQ(count("SELECT count(*) FROM tuning_sessions"), 0);
}

}  // namespace
