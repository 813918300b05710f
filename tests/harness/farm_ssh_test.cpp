// The farm on a real loopback farm (label farm): one OpenSSH sshd per board on 127.0.0.1, keys and
// known_hosts generated here, boards running the dynamically linked riscv64 k3bench under
// qemu-user at VLEN 1024. Deploy once per build hash, hostile strings, host-key refusal, board-side
// timeouts, a board dying mid-run (cells move, samples kept), a reboot, and a stale lease.
#include <gtest/gtest.h>
#include <signal.h>

#include <future>

#include <nlohmann/json.hpp>

#include "background_process.h"
#include "database.h"
#include "farm.h"
#include "farm_store.h"
#include "farm_test_support.h"
#include "results.h"

namespace {

using namespace k3farm_test;

const std::vector<std::string> kTinyDecode = {"--op", "linear_decode", "--shape", "n=96,k=256",
                                              "--params", "workers=2,copies=1", "--reps", "2",
                                              "--iterations", "2", "--warmup", "0", "--json"};

class FarmSsh : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(K3_FARM_RISCV_RUNNER))
        << K3_FARM_RISCV_RUNNER << " missing: cmake -S . -B build/rvv-dynamic -G Ninja "
        << "-DCMAKE_TOOLCHAIN_FILE=cmake/riscv64-linux-gnu-dynamic.cmake && cmake --build build/rvv-dynamic";
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
  EXPECT_EQ(std::distance(fs::directory_iterator(lab_->control_dir()), fs::directory_iterator()), 1);
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
                          fs::directory_iterator()), 1);
  const auto r = f->run("b1", kTinyDecode, 300);
  ASSERT_TRUE(r.ok()) << r.reason << r.process.err;
  const auto j = nlohmann::json::parse(r.process.out);
  EXPECT_EQ(j["environment"]["vlenb"], 128);
  EXPECT_EQ(j["repetitions"].size(), 2u);
}

TEST_F(FarmSsh, HostileStringsArriveIntactAndExecuteNothing) {
  // Board "echo" prints its environment entry and every argv word it gets, NUL-separated, in place
  // of running a runner: the whole run path (wrapper, timeout, env, exec prefix) is under test.
  start(1, "\n[boards.echo]\nport = 0\nwork_dir = \"WD\"\nexec_prefix = [\"sh\", \"-c\", "
           "\"printf '%s\\\\0' \\\"$K3BENCH_HOSTILE\\\" \\\"$@\\\"\", \"echo-prefix\"]\n");
  std::string text = read_file(farm_file_);
  text.replace(text.find("port = 0"), 8, "port = " + std::to_string(lab_->sshd(1).port()));
  text.replace(text.find("\"WD\""), 4, "\"" + lab_->work_dir("echo") + "\"");
  write_file(farm_file_, text);
  const std::string canary = lab_->dir() / "canary";
  std::vector<std::string> hostile = {"it's", "\"dq\"", "a;touch " + canary, "$(touch " + canary + ")",
                                      "`touch " + canary + "`", "x\ny;touch " + canary, "-rf",
                                      "--op", "*", "$HOME", "back\\slash", "", "'; touch " + canary + " #"};
  const std::string hostile_env = "v'$(touch " + canary + ")`id`\n;x";
  setenv("K3BENCH_HOSTILE", hostile_env.c_str(), 1);
  auto f = farm();
  f->board("echo").deploy(K3_FARM_RISCV_RUNNER);
  const auto r = f->run("echo", hostile, 60);
  unsetenv("K3BENCH_HOSTILE");
  ASSERT_TRUE(r.ok()) << r.reason << r.process.err;
  std::vector<std::string> got;
  std::size_t pos = 0;
  for (auto nul = r.process.out.find('\0'); nul != std::string::npos; nul = r.process.out.find('\0', pos)) {
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
  EXPECT_NE(op.process.err.find("unknown op '" + hostile[3] + "'"), std::string::npos) << op.process.err;
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
  lab_->sshd(1).start();            // b1 answers with a new key on the same port
  write_file(kh, b1_old_key);       // ... known_hosts still has the old one; b2 is not in it
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
  EXPECT_NE(cli.out.find("QUARANTINED (host-key): board b1: host key of 127.0.0.1:"), std::string::npos)
      << cli.out << cli.err;
  EXPECT_FALSE(fs::exists(canary));
  EXPECT_FALSE(fs::exists(lab_->work_dir("b1")));
}

}  // namespace
