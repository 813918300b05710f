// The farm layer without sshd: quoting checked by a real /bin/sh, inventory parsing and its
// one-line errors, health comparison, and local boards (this machine) running the real host
// k3bench: deploy once per build hash, board-side timeouts, leases on one database (label harness).
#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>

#include "farm_test_support.h"
#include "harness/host/farm/background_process.h"
#include "harness/host/farm/farm.h"
#include "harness/host/farm/shell_quote.h"
#include "harness/host/store/database.h"
#include "harness/host/store/farm_state.h"
#include "harness/host/store/maintenance.h"

namespace {

using namespace k3farm_test;

// Words a shell would act on if they were not quoted; `canary` must never be created.
std::vector<std::string> hostile_words(const std::string& canary) {
  return {"it's",
          "\"double\"",
          "a;touch " + canary,
          "$(touch " + canary + ")",
          "`touch " + canary + "`",
          "line1\nline2;touch " + canary,
          "-rf",
          "--op",
          " leading and trailing ",
          "*",
          "$HOME",
          "back\\slash",
          "| touch " + canary,
          "&& touch " + canary,
          "",
          "'; touch " + canary + "; echo '"};
}

std::vector<std::string> split_nul(const std::string& s) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  for (auto nul = s.find('\0'); nul != std::string::npos; nul = s.find('\0', pos)) {
    out.push_back(s.substr(pos, nul - pos));
    pos = nul + 1;
  }
  return out;
}

TEST(FarmQuoting, HostileWordsSurviveARealShell) {
  TempDir tmp;
  const std::string canary = tmp / "canary";
  const auto words = hostile_words(canary);
  const auto r = k3targets::run_process({"sh", "-c", "printf '%s\\0' " + k3farm::shell_join(words)},
                                        k3targets::ProcessOptions::with_timeout(10));
  ASSERT_TRUE(r.ok()) << r.err;
  EXPECT_EQ(split_nul(r.out), words);
  EXPECT_FALSE(fs::exists(canary));
  EXPECT_EQ(k3farm::shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(k3farm::shell_quote(""), "''");
}

class FarmInventory : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    const std::string path = tmp_ / "farm.toml";
    write_file(path, text);
    return path;
  }
  std::string error_of(const std::string& text) {
    const std::string path = write(text);
    try {
      k3farm::load_farm(path);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "(no error)";
  }
  TempDir tmp_;
};

TEST_F(FarmInventory, ParsesBoardsWithDefaultsAndResolvesPaths) {
  const auto path = write(R"(
[farm]
name = "lab"
known_hosts = "keys/known_hosts"
lock_command = ["flock", "-n", "/tmp/{board}.lock"]
[defaults]
user = "k3"
identity = "~/.ssh/id_k3"
work_dir = "/var/tmp/k3tune"
cpus = "8-15"
tags = ["k3", "a100"]
[boards.k3-b]
host = "10.0.0.2"
[boards.k3-a]
host = "k3-a.lab"
port = 2222
cpus = "8,10-11"
env = { K3_TCM_LIBRARY = "/usr/lib/libspine_tcm.so" }
)");
  const auto farm = k3farm::load_farm(path);
  EXPECT_EQ(farm.name, "lab");
  ASSERT_EQ(farm.names(), (std::vector<std::string>{"k3-b", "k3-a"}));  // file order
  const auto& a = *farm.find("k3-a");
  EXPECT_EQ(k3targets::to_string(a.kind), std::string("ssh"));
  EXPECT_EQ(a.port, 2222);
  EXPECT_EQ(a.cpus, (std::vector<int>{8, 10, 11}));
  EXPECT_EQ(a.known_hosts, tmp_.path() + "/keys/known_hosts");
  EXPECT_EQ(a.identity, std::string(std::getenv("HOME")) + "/.ssh/id_k3");
  EXPECT_EQ(a.env.at("K3_TCM_LIBRARY"), "/usr/lib/libspine_tcm.so");
  EXPECT_TRUE(a.has_tag("a100"));
  EXPECT_EQ(farm.find("k3-b")->cpus.size(), 8u);
  EXPECT_EQ(farm.lock_command.back(), "/tmp/{board}.lock");
}

TEST_F(FarmInventory, BadInputIsOneLineNamingFileLineAndKey) {
  const std::string head =
      "[farm]\nknown_hosts = \"kh\"\n[defaults]\nidentity = \"id\"\nwork_dir = \"/w\"\n";
  const std::string f = tmp_ / "farm.toml";
  EXPECT_EQ(error_of(head + "[boards.x]\nhost = \"h\"\nport = 70000\n"),
            f + ":8: boards.x.port: expected a port in [1, 65535]");
  EXPECT_EQ(error_of(head + "[boards.x]\nhost = \"h\"\nwork_dir = \"/tmp/a;touch b\"\n"),
            f + ":8: boards.x.work_dir: expected an absolute path of letters, digits, '_', '.', "
                "'/', '+', '-' (no '..')");
  EXPECT_EQ(error_of(head + "[boards.x]\nhost = \"-oProxyCommand=x\"\n"),
            f + ":7: boards.x.host: expected a host name or address (letters, digits, '.', ':', "
                "'-'; not starting with '-')");
  EXPECT_EQ(error_of(head + "[boards.x]\nhost = \"h\"\nenv = { PATH = \"/x\" }\n"),
            f + ":8: boards.x.env.PATH: only K3BENCH_* and K3_* settings are passed to the runner");
  EXPECT_EQ(error_of(head + "[boards.x]\nhost = \"h\"\ncpus = \"15-8\"\n"),
            f + ":8: boards.x.cpus: range '15-8' runs backwards");
  EXPECT_EQ(error_of(head + "[boards.x]\nhost = \"h\"\ncolour = \"red\"\n"),
            f + ":8: boards.x.colour: unknown key (known: kind, host, port, user, identity, "
                "known_hosts, exec_prefix, work_dir, cpus, tags, variant, runner, timeout_s, env, "
                "quarantine_until, pdu, power_attempts_per_day, recover_tcm_locks, test_hooks)");
  EXPECT_EQ(
      error_of("[defaults]\nidentity = \"id\"\nwork_dir = \"/w\"\n[boards.x]\nhost = \"h\"\n"),
      f + ":4: boards.x.known_hosts: missing: host keys are always checked (set "
          "farm.known_hosts or the board's)");
  EXPECT_EQ(error_of(head + "[boards.x]\nhost = \"h\"\nexec_prefix = \"qemu-riscv64 -cpu x\"\n"),
            f + ":8: boards.x.exec_prefix: expected an array of strings (one element per word)");
  EXPECT_NE(error_of("[boards.x\n").find(f + ":1: "), std::string::npos);
  try {
    k3farm::load_farm(tmp_ / "absent.toml");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), tmp_ / "absent.toml" + ": no such farm file");
  }
}

TEST_F(FarmInventory, ShippedExampleAndBuiltInFarmLoad) {
  const auto example = k3farm::load_farm(std::string(K3TUNE_ROOT) + "/configs/farm.example.toml");
  ASSERT_FALSE(example.boards.empty());
  for (const auto& b : example.boards) {
    EXPECT_EQ(k3targets::to_string(b.kind), std::string("ssh"));
    EXPECT_TRUE(b.exec_prefix.empty()) << b.name;
    EXPECT_EQ(b.cpus, (std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15})) << b.name;
    EXPECT_FALSE(b.test_hooks);
  }
  const auto local = k3farm::builtin_local_farm("/src");
  EXPECT_EQ(local.names(), (std::vector<std::string>{"host", "qemu-vlen256", "qemu-vlen1024"}));
  EXPECT_EQ(local.find("qemu-vlen1024")->exec_prefix.at(2),
            "rv64,v=true,vlen=1024,elen=64,vext_spec=v1.0");
}

k3farm::HealthSample sample(const std::string& facts, double at) {
  k3farm::HealthSample s;
  s.taken_at_s = at;
  k3farm::parse_facts(facts, s);
  s.ok = true;
  return s;
}

TEST(FarmHealth, RebootAndThrottlingBetweenTwoProbes) {
  const std::string base =
      "boot_id aaaa\nloadavg 0.5 0.4 0.3 1/100 42\nMemAvailable: 1024000 kB\n"
      "thermal thermal_zone0 cpu-thermal 55000\n"
      "cpufreq 8 performance 2000000 2000000 2000000\ncpufreq 9 performance 2000000 2000000 "
      "2000000\n"
      "marchid\t: 0x8000000041000002\n";
  const auto before = sample("uptime_s 1000\n" + base, 10000);
  EXPECT_EQ(before.marchid, "0x8000000041000002");
  EXPECT_EQ(before.mem_available_kb, 1024000);
  EXPECT_DOUBLE_EQ(before.thermal_c.at("thermal_zone0:cpu-thermal"), 55.0);
  EXPECT_TRUE(
      k3farm::compare_samples(before, sample("uptime_s 1100\n" + base, 10100), {8}, 90).clean());
  // Uptime went back: a reboot, even with the same boot id (the test hook shifts only uptime).
  auto c = k3farm::compare_samples(before, sample("uptime_s 5\n" + base, 10100), {8}, 90);
  EXPECT_TRUE(c.rebooted);
  // Rebooted long ago relative to the probe: boot time moved although uptime grew.
  c = k3farm::compare_samples(before, sample("uptime_s 2000\n" + base, 20000), {8}, 90);
  EXPECT_TRUE(c.rebooted);
  // Throttling on a measured CPU: below maximum under "performance", or a hot zone.
  std::string slow = base;
  slow.replace(slow.find("cpufreq 8 performance 2000000"), 29, "cpufreq 8 performance 1200000");
  c = k3farm::compare_samples(before, sample("uptime_s 1100\n" + slow, 10100), {8}, 90);
  EXPECT_TRUE(c.throttled && !c.rebooted);
  EXPECT_TRUE(
      k3farm::compare_samples(before, sample("uptime_s 1100\n" + slow, 10100), {9}, 90).clean());
  std::string hot = base;
  hot.replace(hot.find("55000"), 5, "97000");
  EXPECT_TRUE(
      k3farm::compare_samples(before, sample("uptime_s 1100\n" + hot, 10100), {8}, 90).throttled);
  std::string governor = base;
  governor.replace(governor.find("cpufreq 9 performance"), 21, "cpufreq 9 powersave  ");
  EXPECT_TRUE(k3farm::compare_samples(before, sample("uptime_s 1100\n" + governor, 10100), {}, 90)
                  .throttled);
}

// A farm file of local boards running the host k3bench.
std::string local_farm(const TempDir& tmp, const std::string& farm_extra = "") {
  const std::string path = tmp / "farm.toml";
  write_file(path, "[farm]\nname = \"here\"\n" + farm_extra +
                       "\n[defaults]\nkind = \"local\"\nrunner = \"" + std::string(K3BENCH_PATH) +
                       "\"\ntimeout_s = 60\n[boards.l1]\nwork_dir = \"" + (tmp / "l1") +
                       "\"\n[boards.l2]\nwork_dir = \"" + (tmp / "l2") + "\"\n");
  return path;
}

TEST(FarmLocalBoard, DeployOnceProbeRunAndTimeout) {
  TempDir tmp;
  k3farm::Farm farm(k3farm::load_farm(local_farm(tmp)), K3TUNE_ROOT, nullptr, "run-1");
  auto& b = farm.board("l1");
  auto d = b.deploy(K3BENCH_PATH);
  EXPECT_TRUE(d.copied);
  EXPECT_EQ(d.why, "absent");
  EXPECT_EQ(d.remote_path, tmp / "l1/runners/k3bench-" + k3farm::sha256_file(K3BENCH_PATH));
  EXPECT_FALSE(b.deploy(K3BENCH_PATH).copied);
  const auto h = farm.probe("l1");
  ASSERT_TRUE(h.ok) << h.error;
  EXPECT_GT(h.uptime_s, 0);
  EXPECT_GT(h.mem_available_kb, 0);
  EXPECT_EQ(h.tcm_backend, "emulated");
  const auto ok = farm.run("l1",
                           {"--op", "residual_add", "--shape", "rows=1,dim=256", "--reps", "2",
                            "--iterations", "2", "--json"},
                           60);
  ASSERT_TRUE(ok.ok()) << ok.reason;
  EXPECT_EQ(nlohmann::json::parse(ok.process.out)["repetitions"].size(), 2u);
  // A hung runner: killed on the board side after 1 s; nothing of it is left running.
  const auto hung = farm.run(
      "l1",
      {"--op", "residual_add", "--shape", "rows=1,dim=256", "--reps", "1000", "--min-time", "1000"},
      1);
  EXPECT_EQ(hung.fault, k3farm::Fault::kRunnerTimeout) << hung.reason;
  EXPECT_LT(hung.process.wall_ns, 20e9);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(processes_mentioning(tmp / "l1/runners").empty());
  const auto v = farm.judge("l1", hung);
  EXPECT_FALSE(v.board_fault);
  EXPECT_FALSE(
      v.quarantined);  // one timeout is the cell's fault; max_timeouts (2) in a row is the board's
  const auto bad = farm.run("l1", {"--op", "no_such_op"}, 60);
  EXPECT_EQ(bad.fault, k3farm::Fault::kCell);
  EXPECT_NE(bad.reason.find("exit code 2"), std::string::npos) << bad.reason;
}

TEST(FarmLocalBoard, LeasesAreExclusiveAndHonourTheLockCommand) {
  TempDir tmp;
  const std::string db_path = tmp / "results.db";
  auto db1 = k3store::open_database(db_path, k3store::OpenMode::kCreateOrUpdate);
  auto db2 = k3store::open_database(db_path, k3store::OpenMode::kCreateOrUpdate);
  const auto cfg = k3farm::load_farm(
      local_farm(tmp, "lock_command = [\"flock\", \"-n\", \"" + (tmp / "{board}.reserve") + "\"]"));
  k3farm::Farm a(cfg, K3TUNE_ROOT, db1.get(), "run-a");
  k3farm::Farm b(cfg, K3TUNE_ROOT, db2.get(), "run-b");
  a.lease("l1");
  EXPECT_TRUE(fs::exists(tmp / "l1/lease.lock"));
  EXPECT_EQ(k3farm::board_lock_held(a.board("l1")), std::optional<bool>(true));
  try {
    b.lease("l1");
    FAIL() << "second lease granted";
  } catch (const k3farm::LeaseError& e) {
    EXPECT_NE(std::string(e.what()).find("board l1: leased by"), std::string::npos) << e.what();
  }
  // The reservation tool says no (someone holds l2's reservation file): no lease, no row.
  // Waits until the reservation file is held (or free): flock and the `sleep` it starts take and
  // drop it a little after they are started or killed, and a fixed sleep loses that race.
  auto wait_reservation = [&](bool held) {
    const auto since = std::chrono::steady_clock::now();
    while (k3targets::run_process({"flock", "-n", tmp / "l2.reserve", "true"},
                                  k3targets::ProcessOptions::with_timeout(10))
               .ok() == held) {
      if (std::chrono::steady_clock::now() - since > std::chrono::seconds(30)) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  };
  k3farm::BackgroundProcess other({"flock", tmp / "l2.reserve", "sleep", "60"});
  ASSERT_TRUE(wait_reservation(true)) << "flock never took " << (tmp / "l2.reserve");
  try {
    b.lease("l2");
    FAIL() << "lease granted although the lock command refused";
  } catch (const k3farm::LeaseError& e) {
    EXPECT_NE(std::string(e.what()).find("lease not granted (lock command: "), std::string::npos)
        << e.what();
  }
  other.stop(0);
  ASSERT_TRUE(wait_reservation(false)) << (tmp / "l2.reserve") << " still held after the kill";
  EXPECT_EQ(db1->scalar_int("SELECT count(*) FROM farm_leases"), 1);
  b.lease("l2");
  a.release("l1");
  EXPECT_EQ(k3farm::board_lock_held(a.board("l1")), std::optional<bool>(false));
  b.lease("l1");
  EXPECT_EQ(db1->scalar_int("SELECT count(*) FROM farm_leases WHERE run_uuid = 'run-b'"), 2);
}

TEST(FarmCli, BadFarmFileIsOneLineExit2AndWritesNothing) {
  TempDir tmp;
  const std::string bad = tmp / "farm.toml";
  write_file(bad, "[farm]\nknown_hosts = \"kh\"\n[boards.x]\nhost = \"h\"\nidentity = \"i\"\n");
  for (const char* cmd : {"probe", "lease", "list"}) {
    std::vector<std::string> argv{K3TUNE_PATH, "--root", K3TUNE_ROOT, "--db", tmp / "results.db",
                                  "farm",      "--farm", bad,         cmd};
    if (std::string(cmd) == "lease") argv.insert(argv.end(), {"--board", "x"});
    const auto r = k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(60));
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_EQ(r.err,
              "k3tune: " + bad + ":3: boards.x.work_dir: missing (an absolute path on the board)\n")
        << cmd;
    EXPECT_FALSE(fs::exists(tmp / "results.db")) << cmd;
  }
}

TEST(FarmStore, QuarantinesAndProbesMergeFromShardsLeasesDoNot) {
  TempDir tmp;
  for (const char* shard : {"a", "b"}) {
    auto c = k3store::open_database(tmp / (std::string(shard) + ".db"),
                                    k3store::OpenMode::kCreateOrUpdate);
    k3store::insert_quarantine(
        *c, {std::string("run-") + shard, "k3-01", "rebooted", "uptime went back", "t"});
    k3store::insert_probe(*c, std::string("run-") + shard, "k3-01", true, "{}");
    k3store::insert_lease(
        *c, {"k3-01", "lab", std::string("run-") + shard, "h", 1, "x", std::nullopt, "t"});
  }
  for (int pass = 0; pass < 2; ++pass) {
    const auto added = k3store::merge_databases(tmp / "all.db", {tmp / "a.db", tmp / "b.db"});
    EXPECT_EQ(added.at("farm_quarantine"), pass == 0 ? 2 : 0);
    EXPECT_EQ(added.at("farm_probes"), pass == 0 ? 2 : 0);
  }
  auto all = k3store::open_database(tmp / "all.db", k3store::OpenMode::kReadOnly);
  EXPECT_EQ(k3store::quarantine_rows(*all, "run-b").at(0).reason, "uptime went back");
  EXPECT_EQ(all->scalar_int("SELECT count(*) FROM farm_leases"), 0);
}

}  // namespace

// A command that exits while something it started keeps its stdout open (a persisted ssh
// ControlMaster that kept its parent's stdio behaves so) is finished when it exits: its output
// arrives and no timeout is reported.
TEST(ChildProcess, ExitIsTheEndEvenWhenAGrandchildHoldsThePipes) {
  TempDir tmp;
  const std::string pid_file = tmp / "holder.pid";
  const auto start = std::chrono::steady_clock::now();
  const auto r = k3targets::run_process(
      {"sh", "-c", "setsid sleep 60 & echo $! > \"$1\"; echo done; echo warn >&2", "sh", pid_file},
      k3targets::ProcessOptions::with_timeout(30));
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const pid_t holder = std::stoi(read_file(pid_file));
  kill(holder, SIGKILL);
  EXPECT_TRUE(r.ok()) << r.failure_reason(30);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.out, "done\n");
  EXPECT_EQ(r.err, "warn\n");
  EXPECT_LT(took, 10.0);
  EXPECT_LT(r.wall_ns, 5e9);  // spawn to exit, not to the holder's end
}
