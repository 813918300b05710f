// `k3tune doctor --farm` on a real loopback farm (label farm): one healthy board, one board tagged
// k3 whose A100 facts come from test hooks, and one board broken in each way a lab meets before
// its first night -- unreachable, silent (accepts TCP, never speaks SSH), a changed host key, no
// runner built, X100 cores named as the board's CPUs, an unwritable /proc/set_ai_thread, VLEN 256,
// a CPU that does not exist, too little free disk. Rows, lines and exit codes are asserted
// exactly where the machine does not decide them; nothing reaches the results database.
#include <gtest/gtest.h>

#include <chrono>
#include <map>

#include <nlohmann/json.hpp>

#include "farm_test_support.h"
#include "pdu_daemon_fixture.h"

namespace {

using namespace k3farm_test;
using Rows = std::map<std::string, nlohmann::json>;  // "board/check" -> row

const std::string kChecks[] = {"reachable", "host-key",  "runner", "marchid", "vlenb",
                               "tcm",       "ai-thread", "pin",    "cpufreq", "thermal",
                               "disk",      "perf",      "pdu"};

std::string trimmed_file(const std::string& path) {
  std::string s = read_file(path);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

class FarmSshDoctor : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(K3_FARM_RISCV_RUNNER)) << K3_FARM_RISCV_RUNNER << " missing";
    ASSERT_TRUE(fs::exists("/usr/sbin/sshd")) << "sshd missing: bash scripts/setup.sh";
  }
  void start(int sshds) { lab_ = std::make_unique<LoopbackFarm>(sshds); }
  // Another board on sshd 1 (its own work_dir), with `more` TOML lines.
  std::string board(const std::string& name, const std::string& more) const {
    return "\n[boards." + name + "]\nport = " + std::to_string(lab_->sshd(1).port()) +
           "\nwork_dir = \"" + lab_->work_dir(name) + "\"\ntest_hooks = true\n" + more;
  }
  void hook(const std::string& board, const std::string& file, const std::string& text) const {
    fs::create_directories(lab_->work_dir(board) + "/test-hooks");
    write_file(lab_->work_dir(board) + "/test-hooks/" + file, text);
  }
  // A k3 board whose kernel the hooks make look like a K3's (A100 marchid, opt-in file writable).
  std::string k3_board(const std::string& name, const std::string& more = "") const {
    hook(name, "extra_facts", "marchid : 0x8000000041000002\n");
    hook(name, "doctor_facts", "ai_thread writable\n");
    return board(name, "tags = [\"k3\"]\ncpus = \"0\"\n" + more);
  }
  struct Cmd {
    int code;
    std::string out, err;
    double seconds;
  };
  Cmd doctor(const std::vector<std::string>& more) const {
    std::vector<std::string> argv{K3TUNE_PATH, "--root", K3TUNE_ROOT, "--db",
                                  db(),        "doctor", "--farm",    farm_file_};
    argv.insert(argv.end(), more.begin(), more.end());
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(300));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return {r.signal ? 128 + r.signal : r.exit_code, r.out, r.err, s};
  }
  // The same run as rows (--json) and as text: every row is one line in the text, in order.
  Rows rows_of(const std::vector<std::string>& more, int expected_code) const {
    auto with_json = more;
    with_json.push_back("--json");
    const auto j = doctor(with_json);
    EXPECT_EQ(j.code, expected_code) << j.out << j.err;
    const auto doc = nlohmann::json::parse(j.out);
    EXPECT_EQ(doc["ready"], expected_code == 0);
    Rows rows;
    std::string expected_text;
    for (const auto& r : doc["rows"]) {
      rows[r["board"].get<std::string>() + "/" + r["check"].get<std::string>()] = r;
      expected_text += fmt_line(r);
    }
    const auto t = doctor(more);
    EXPECT_EQ(t.code, expected_code);
    // Line 1 names the farm; the last line is the summary. Details that the machine decides (a
    // temperature, free space) could move between the two runs: compare check and status.
    EXPECT_EQ(strip_details(t.out.substr(t.out.find('\n') + 1,
                                         t.out.rfind('\n', t.out.size() - 2) - t.out.find('\n'))),
              strip_details(expected_text));
    last_text_ = t.out;
    return rows;
  }
  static std::string fmt_line(const nlohmann::json& r) {
    char head[64];
    std::snprintf(head, sizeof(head), "%-12s %-10s %-5s ", r["board"].get<std::string>().c_str(),
                  r["check"].get<std::string>().c_str(), r["status"].get<std::string>().c_str());
    const std::string fix = r["fix"];
    return head + r["detail"].get<std::string>() + (fix.empty() ? "" : " -- fix: " + fix) + "\n";
  }
  static std::string strip_details(const std::string& text) {
    std::string out, line;
    std::istringstream in(text);
    while (std::getline(in, line)) out += line.substr(0, 30) + "\n";
    return out;
  }
  static void expect_row(const Rows& rows, const std::string& key, const std::string& status,
                         bool required, const std::string& detail, const std::string& fix = "") {
    ASSERT_TRUE(rows.count(key)) << key;
    const auto& r = rows.at(key);
    EXPECT_EQ(r["status"], status) << key << ": " << r.dump();
    EXPECT_EQ(r["required"], required) << key;
    EXPECT_EQ(r["detail"], detail) << key;
    EXPECT_EQ(r["fix"], fix) << key;
  }
  static std::string detail(const Rows& rows, const std::string& key) {
    return rows.count(key) ? rows.at(key)["detail"].get<std::string>() : "(no row " + key + ")";
  }
  void expect_skipped_after(const Rows& rows, const std::string& board, const std::string& last,
                            const std::string& why) const {
    bool after = false;
    for (const auto& c : kChecks) {
      // The PDU is not the board: it is asked whether or not the board answers.
      if (after && c != "pdu") expect_row(rows, board + "/" + c, "skip", false, why);
      after = after || c == last;
    }
    expect_row(rows, board + "/pdu", "info", false,
               "no PDU outlet named: a dead board stays out until `k3tune farm release`");
  }
  // Board -> its failed checks: exactly one per broken board is what the tests expect.
  static std::map<std::string, std::string> failed_checks(const Rows& rows) {
    std::map<std::string, std::string> failed;
    for (const auto& [key, r] : rows)
      if (r["status"] == "FAIL")
        failed[r["board"]] +=
            (failed[r["board"]].empty() ? "" : ",") + r["check"].get<std::string>();
    return failed;
  }
  std::string db() const { return lab_->dir() / "results.db"; }
  std::string where_cmd(int sshd) const {
    return "ssh -p " + std::to_string(lab_->sshd(sshd).port()) + " " + user_name() + "@127.0.0.1";
  }
  std::string where(int sshd) const {
    return "ssh " + user_name() + "@127.0.0.1:" + std::to_string(lab_->sshd(sshd).port());
  }
  std::unique_ptr<LoopbackFarm> lab_;
  std::string farm_file_;
  mutable std::string last_text_;
};

// What this machine says about itself, as the board (a loopback sshd) reports it.
std::string expected_perf() {
  const std::string p = trimmed_file("/proc/sys/kernel/perf_event_paranoid");
  const std::string u = fs::exists("/proc/sys/kernel/perf_user_access")
                            ? trimmed_file("/proc/sys/kernel/perf_user_access")
                            : "absent";
  return "perf_event_paranoid " + p + ", perf_user_access " + u +
         (std::stoi(p) <= 2 ? ": user-space counters open" : ": counters will not open");
}

TEST_F(FarmSshDoctor, AHealthyBoardAndAK3BoardAreReadyAndNothingIsStored) {
  start(1);
  ASSERT_TRUE(fs::exists(K3_FARM_RISCV_TCM_DOUBLE)) << K3_FARM_RISCV_TCM_DOUBLE;
  // "warm": a slow governor and a hot zone (hooks) -- advisory: the board is still ready.
  hook("warm", "extra_facts",
       "cpufreq 0 schedutil 1200000 2000000 2000000\nthermal thermal_zone0 cpu-thermal 97000\n");
  hook("warm", "doctor_facts", "thermal_zones 1\n");
  farm_file_ = lab_->write_farm(
      K3_FARM_RISCV_RUNNER, k3_board("k3ok", "env = { K3_TCM_LIBRARY = \"" +
                                                 std::string(K3_FARM_RISCV_TCM_DOUBLE) + "\" }\n") +
                                board("warm", ""));
  const Rows rows = rows_of({}, 0);
  EXPECT_EQ(rows.size(), 3 * std::size(kChecks));
  const std::string kh = lab_->known_hosts();
  expect_row(rows, "b1/reachable", "ok", true, where(1) + " answers");
  expect_row(rows, "b1/host-key", "ok", true, "matches " + kh);
  const std::string runner = detail(rows, "b1/runner");
  EXPECT_EQ(runner.rfind("rvv-dynamic runner k3bench-", 0), 0u) << runner;
  EXPECT_NE(runner.find(" copied (absent); runs: k3bench "), std::string::npos) << runner;
  expect_row(rows, "b1/marchid", "info", false, "none (not tagged k3: not checked)");
  expect_row(rows, "b1/vlenb", "info", false, "vlenb 128 (VLEN 1024) (not tagged k3)");
  EXPECT_EQ(rows.at("b1/tcm")["status"], "info");
  expect_row(rows, "b1/ai-thread", "info", false,
             "/proc/set_ai_thread absent (not tagged k3: threads run unpinned)");
  EXPECT_EQ(rows.at("b1/pin")["status"], "ok") << detail(rows, "b1/pin");
  EXPECT_EQ(detail(rows, "b1/pin").rfind("CPUs 0", 0), 0u);
  if (!fs::exists("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq"))
    expect_row(rows, "b1/cpufreq", "info", false,
               "no cpufreq in sysfs (a VM, or a kernel without it): frequency not checked");
  if (!fs::exists("/sys/class/thermal/thermal_zone0"))
    expect_row(rows, "b1/thermal", "warn", false,
               "no thermal zones under /sys/class/thermal: heat throttling goes unseen",
               "enable the SoC's thermal driver in the board's kernel");
  EXPECT_EQ(rows.at("b1/disk")["status"], "ok");
  EXPECT_NE(detail(rows, "b1/disk")
                .find(" MiB free in " + lab_->work_dir("b1") + " (a night needs 1024 MiB)"),
            std::string::npos)
      << detail(rows, "b1/disk");
  expect_row(rows, "b1/perf", "info", false, expected_perf(),
             expected_perf().ends_with("open")
                 ? ""
                 : "sysctl -w kernel.perf_event_paranoid=2 (if counters are wanted)");
  expect_row(rows, "b1/pdu", "info", false,
             "no PDU outlet named: a dead board stays out until `k3tune farm release`");
  // The K3 board: its A100 facts pass, VLEN is the runner's own under qemu (1024).
  expect_row(rows, "k3ok/marchid", "ok", true, "0x8000000041000002 (A100)");
  expect_row(rows, "k3ok/vlenb", "ok", true, "vlenb 128 (VLEN 1024)");
  EXPECT_EQ(rows.at("k3ok/tcm")["status"], "ok");  // the test double as the vendor library
  EXPECT_EQ(detail(rows, "k3ok/tcm").rfind("real (", 0), 0u) << detail(rows, "k3ok/tcm");
  EXPECT_EQ(rows.at("b1/tcm")["status"], "info");
  EXPECT_EQ(detail(rows, "b1/tcm").rfind("emulated (", 0), 0u) << detail(rows, "b1/tcm");
  expect_row(rows, "k3ok/ai-thread", "ok", true,
             "/proc/set_ai_thread writable (threads opt in to the A100 cores)");
  expect_row(rows, "k3ok/pin", "ok", true, "CPUs 0 take an affinity after the opt-in");
  expect_row(rows, "warm/cpufreq", "warn", false,
             "governor schedutil on CPUs 0 (not performance); current 1200 MHz, maximum 2000 MHz",
             "cpupower frequency-set -g performance (or write performance to "
             "/sys/devices/system/cpu/cpuN/cpufreq/scaling_governor at boot)");
  expect_row(rows, "warm/thermal", "warn", false,
             "1 zones readable, hottest thermal_zone0:cpu-thermal at 97.0 C (limit 95 C)",
             "cool the board (fan, airflow) before a night");
  EXPECT_TRUE(last_text_.ends_with("3 of 3 boards ready for a night\n")) << last_text_;
  EXPECT_EQ(last_text_.rfind("farm loopback (" + farm_file_ +
                                 "): 3 boards; a night needs 1024 "
                                 "MiB free in work_dir\n",
                             0),
            0u)
      << last_text_;
  // A check, not a run: no database, no lease, no probe row.
  EXPECT_FALSE(fs::exists(db()));
  // The runner is content-addressed: the second run found it in place.
  EXPECT_NE(detail(rows_of({"--board", "b1"}, 0), "b1/runner").find(" present; runs: "),
            std::string::npos);
}

TEST_F(FarmSshDoctor, UnreachableSilentChangedKeyAndRefusedLoginFailFastWithTheirFix) {
  start(3);
  // b2 is down; "silent" accepts TCP but never speaks SSH (a hung board); b1's host key changes.
  lab_->sshd(2).kill_all();
  const int silent_port = free_loopback_port();
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(silent_port));
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(listener, 8), 0);
  lab_->sshd(1).kill_all();
  lab_->sshd(1).new_host_key();
  lab_->sshd(1).start();  // known_hosts keeps the old key
  // b3 logs in with a key the board does not know.
  const std::string stranger = lab_->dir() / "stranger_ed25519";
  run_or_throw({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", stranger});
  farm_file_ = lab_->write_farm(K3_FARM_RISCV_RUNNER,
                                "\n[boards.silent]\nport = " + std::to_string(silent_port) +
                                    "\nwork_dir = \"" + lab_->work_dir("silent") + "\"\n");
  std::string text = read_file(farm_file_);
  text.insert(text.find("\n", text.find("[boards.b3]")) + 1, "identity = \"" + stranger + "\"\n");
  write_file(farm_file_, text);
  const auto t0 = std::chrono::steady_clock::now();
  const Rows rows = rows_of({}, 1);
  close(listener);
  // connect_timeout_s = 5 in the loopback farm: the silent board costs that, not a hang.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 60);
  const std::string kh = lab_->known_hosts();
  const std::string p1 = std::to_string(lab_->sshd(1).port());
  const std::string p2 = std::to_string(lab_->sshd(2).port());
  expect_row(rows, "b1/reachable", "ok", true, where(1) + " answers (its host key was refused)");
  expect_row(rows, "b1/host-key", "FAIL", true,
             "board b1: host key of 127.0.0.1:" + p1 + " changed (does not match " + kh +
                 "); refusing to connect, nothing ran",
             "if the board was reinstalled: ssh-keygen -R '[127.0.0.1]:" + p1 + "' -f " + kh +
                 "; then compare the key with the board's console (ssh-keygen -lf "
                 "/etc/ssh/ssh_host_ed25519_key.pub), then: ssh-keyscan -p " +
                 p1 + " 127.0.0.1 >> " + kh);
  expect_skipped_after(rows, "b1", "host-key", "board not reached");
  expect_row(
      rows, "b2/reachable", "FAIL", true,
      "board b2: unreachable: ssh: connect to host 127.0.0.1 port " + p2 + ": Connection refused",
      "check the board's power, network and sshd; then `ssh -p " + p2 + " " + user_name() +
          "@127.0.0.1 true` must work (connect timeout 5 s: [farm] connect_timeout_s)");
  expect_skipped_after(rows, "b2", "reachable", "board not reached");
  EXPECT_EQ(rows.at("silent/reachable")["status"], "FAIL");
  EXPECT_EQ(detail(rows, "silent/reachable").rfind("board silent: unreachable: ", 0), 0u)
      << detail(rows, "silent/reachable");
  expect_skipped_after(rows, "silent", "reachable", "board not reached");
  const std::string p3 = std::to_string(lab_->sshd(3).port());
  EXPECT_EQ(
      detail(rows, "b3/reachable").rfind("board b3: login to 127.0.0.1:" + p3 + " refused (", 0),
      0u)
      << detail(rows, "b3/reachable");
  EXPECT_EQ(rows.at("b3/reachable")["fix"],
            "append " + stranger +
                ".pub to ~/.ssh/authorized_keys of the board's user (ssh-copy-id -i " + stranger +
                " -p " + p3 + " " + user_name() + "@127.0.0.1)");
  expect_row(rows, "b3/host-key", "ok", true, "matches " + kh + " (checked before the login)");
  expect_skipped_after(rows, "b3", "host-key", "board not reached");
  EXPECT_TRUE(last_text_.ends_with(
      "0 of 4 boards ready for a night; not ready: b1 (host-key), b2 (reachable), b3 "
      "(reachable), silent (reachable)\n"))
      << last_text_;
  EXPECT_FALSE(fs::exists(lab_->work_dir("b1")));  // nothing ran behind the refused key
}

// One loopback sshd carrying a board broken one way each (own work_dir and hooks).
class FarmSshDoctorBroken : public FarmSshDoctor {
 protected:
  void SetUp() override {
    FarmSshDoctor::SetUp();
    start(1);
    hook("x100", "doctor_facts",
         "ai_thread writable\ncpu_marchid 0 0x8000000058000002\ncpu_marchid 1 "
         "0x8000000041000002\n");
    const std::string sigill_prefix =
        "exec_prefix = [\"sh\", \"-c\", 'case \"$*\" in *--op*) echo \"Illegal instruction\" "
        ">&2; exit 132;; esac; exec qemu-riscv64 -L /usr/riscv64-linux-gnu -cpu "
        "rv64,v=true,vlen=1024,elen=64,vext_spec=v1.0 \"$@\"', \"sigill\"]\n";
    const std::string qemu256 =
        "exec_prefix = [\"qemu-riscv64\", \"-L\", \"/usr/riscv64-linux-gnu\", \"-cpu\", "
        "\"rv64,v=true,vlen=256,elen=64,vext_spec=v1.0\"]\n";
    std::string extra =
        board("x100", "tags = [\"k3\"]\ncpus = \"0\"\n") + k3_board("optin") +
        k3_board("vlen256", qemu256) + k3_board("nocpu") +
        board("nobuild", "runner = \"" + missing_runner() + "\"\n") +
        // Describes itself, but its kernels die (built for what the board lacks).
        board("sigill", sigill_prefix) +
        // The real TCM (the test double), with a lock a killed run left.
        board("stale",
              "env = { K3_TCM_LIBRARY = \"" + std::string(K3_FARM_RISCV_TCM_DOUBLE) +
                  "\" }\nexec_prefix = [\"env\", \"FAKE_SPINE_TCM_STATE=" + stale_tcm_state() +
                  "\", \"qemu-riscv64\", \"-L\", "
                  "\"/usr/riscv64-linux-gnu\", \"-cpu\", "
                  "\"rv64,v=true,vlen=1024,elen=64,vext_spec=v1.0\"]\n");
    hook("optin", "doctor_facts", "ai_thread readonly\n");
    extra.replace(extra.find("cpus = \"0\"", extra.find("[boards.nocpu]")), 10, "cpus = \"1023\"");
    farm_file_ = lab_->write_farm(K3_FARM_RISCV_RUNNER, extra);
  }
  std::string missing_runner() const { return lab_->dir() / "missing/k3bench"; }
  // The test double's shared state (int owner_tid[8], int maps[8]) with block 2 acquired by a
  // thread that has exited: a stale lock, as a killed run leaves one.
  std::string stale_tcm_state() const {
    const pid_t gone = fork();
    if (gone == 0) _exit(0);
    waitpid(gone, nullptr, 0);
    int state[16] = {};
    state[2] = static_cast<int>(gone);
    const std::string path = lab_->dir() / "tcm.state";
    write_file(path, std::string(reinterpret_cast<const char*>(state), sizeof(state)));
    return path;
  }
  // The line of the farm file where [boards.nobuild] starts (the inventory's defined_in).
  std::string nobuild_line() const {
    const std::string text = read_file(farm_file_);
    const auto at = text.find("[boards.nobuild]");
    return std::to_string(std::count(text.begin(), text.begin() + at, '\n') + 1);
  }
};

TEST_F(FarmSshDoctorBroken, K3BoardsWithWrongA100FactsFailOnlyThatCheck) {
  const Rows rows =
      rows_of({"--board", "x100", "--board", "optin", "--board", "vlen256", "--board", "nocpu"}, 1);
  EXPECT_EQ(
      failed_checks(rows),
      (std::map<std::string, std::string>{
          {"x100", "marchid"}, {"optin", "ai-thread"}, {"vlen256", "vlenb"}, {"nocpu", "pin"}}));
  EXPECT_EQ(detail(rows, "x100/marchid"),
            "CPU 0 of cpus 0 has marchid 0x8000000058000002, not an A100's (0x8000000041000002)");
  EXPECT_EQ(rows.at("x100/marchid")["fix"].get<std::string>().rfind(
                "set cpus = \"1\" (the A100 CPUs) in the inventory entry " + farm_file_ + ":", 0),
            0u)
      << rows.at("x100/marchid").dump();
  expect_row(rows, "optin/ai-thread", "FAIL", true,
             "/proc/set_ai_thread is not writable by the board's user",
             "make it writable at boot (chmod 0666 /proc/set_ai_thread, e.g. a systemd unit)");
  EXPECT_EQ(detail(rows, "vlen256/vlenb"), "vlenb 32 (VLEN 256), not 128 (an A100's VLEN 1024)");
  EXPECT_EQ(detail(rows, "nocpu/pin"),
            "CPU 1023: taskset: failed to set affinity: Invalid argument");
  EXPECT_NE(last_text_.find("0 of 4 boards ready for a night; not ready: x100 (marchid), optin "
                            "(ai-thread), vlen256 (vlenb), nocpu (pin)"),
            std::string::npos)
      << last_text_;
  EXPECT_FALSE(fs::exists(db()));
}

TEST_F(FarmSshDoctorBroken, RunnerAndDiskFailuresAndStaleTcmLocksCarryTheirFix) {
  const Rows rows = rows_of({"--board", "nobuild", "--board", "sigill", "--board", "stale"}, 1);
  EXPECT_EQ(failed_checks(rows),
            (std::map<std::string, std::string>{{"nobuild", "runner"}, {"sigill", "runner"}}));
  const std::string missing = missing_runner();
  expect_row(rows, "nobuild/runner", "FAIL", true,
             "runner " + missing + ": " + missing +
                 ": cannot read (build it: k3tune build --variant rvv-dynamic)",
             "build the runner that runner = \"" + missing + "\" names (" + farm_file_ + ":" +
                 nobuild_line() +
                 "), or drop the key to deploy variant rvv-dynamic's (k3tune "
                 "build --variant rvv-dynamic)");
  expect_row(rows, "nobuild/vlenb", "skip", false, "the runner did not run");
  EXPECT_EQ(rows.at("nobuild/disk")["status"], "ok");  // the board's own checks still run
  EXPECT_EQ(detail(rows, "sigill/runner")
                .rfind("board sigill: the runner describes itself but one residual_add call "
                       "failed: ",
                       0),
            0u)
      << detail(rows, "sigill/runner");
  EXPECT_NE(detail(rows, "sigill/runner").find("Illegal instruction"), std::string::npos);
  EXPECT_EQ(rows.at("sigill/vlenb")["status"], "info");  // its facts were read
  // Stale TCM locks: advisory, with the runner's own recovery on that board.
  const auto& stale = rows.at("stale/tcm");
  EXPECT_EQ(stale["status"], "warn");
  EXPECT_EQ(stale["required"], false);
  EXPECT_EQ(stale["detail"].get<std::string>().rfind("real (", 0), 0u) << stale.dump();
  EXPECT_TRUE(stale["detail"].get<std::string>().ends_with("; stale locks on blocks [2]"))
      << stale.dump();
  EXPECT_EQ(stale["fix"].get<std::string>().rfind(
                "a killed run left them; with nothing running on the board: " + where_cmd(1) +
                    " env FAKE_SPINE_TCM_STATE=" + lab_->dir() / "tcm.state" + " qemu-riscv64 ",
                0),
            0u)
      << stale.dump();
  EXPECT_TRUE(stale["fix"].get<std::string>().ends_with(" --tcm-force-release all"));
  EXPECT_TRUE(last_text_.ends_with(
      "1 of 3 boards ready for a night; not ready: nobuild (runner), sigill (runner)\n"))
      << last_text_;
  // Too little free disk: the threshold is the command's (--min-free-mib), stated in the row.
  const Rows full = rows_of({"--board", "b1", "--min-free-mib", "1000000000"}, 1);
  const std::string d = detail(full, "b1/disk");
  EXPECT_EQ(full.at("b1/disk")["status"], "FAIL");
  EXPECT_NE(d.find(" MiB free in " + lab_->work_dir("b1") + " (a night needs 1000000000 MiB)"),
            std::string::npos)
      << d;
  EXPECT_EQ(full.at("b1/disk")["fix"],
            "free space on the board's filesystem of " + lab_->work_dir("b1") +
                " (runners of old builds: " + lab_->work_dir("b1") + "/runners)");
  EXPECT_EQ(failed_checks(full), (std::map<std::string, std::string>{{"b1", "disk"}}));
  EXPECT_FALSE(fs::exists(db()));
}

TEST_F(FarmSshDoctor, APduOutletIsCheckedWithoutSwitchingAndEvenWhenItsBoardIsDead) {
  ASSERT_TRUE(fs::exists("/usr/sbin/pdudaemon")) << "pdudaemon missing (scripts/setup.sh)";
  start(2);
  const PduDaemon pdu(lab_->dir());
  // b2 is dead: its outlet is exactly what a night would need. "nodaemon" names a daemon that is
  // not running (a port nothing listens on).
  lab_->sshd(2).kill_all();
  const std::string nowhere = "http://127.0.0.1:" + std::to_string(free_loopback_port());
  farm_file_ = lab_->write_farm(
      K3_FARM_RISCV_RUNNER,
      board("nodaemon", "pdu = { daemon = \"" + nowhere + "\", name = \"lab\", outlet = 7 }\n"));
  std::string farm = read_file(farm_file_);
  farm = with_outlet(farm, "b1", pdu, 30);
  farm = with_outlet(farm, "b2", pdu, 30);
  write_file(farm_file_, farm);
  const Rows rows = rows_of({}, 1);
  const std::string answers = "pdudaemon at " + pdu.url() + " answers; PDU lab outlet ";
  const std::string how = " not switched to check it (a reboot is off 1 s, then SSH within 30 s)";
  expect_row(rows, "b1/pdu", "ok", true, answers + "1" + how);
  EXPECT_EQ(rows.at("b1/runner")["status"], "ok") << detail(rows, "b1/runner");
  // The dead board: every board check skipped, its outlet still asked.
  EXPECT_EQ(rows.at("b2/reachable")["status"], "FAIL");
  EXPECT_EQ(rows.at("b2/runner")["status"], "skip");
  expect_row(rows, "b2/pdu", "ok", true, answers + "2" + how);
  const std::string pdu_failure = detail(rows, "nodaemon/pdu");
  EXPECT_EQ(pdu_failure.rfind("pdudaemon does not answer: " + nowhere + ": curl: (7) ", 0), 0u)
      << pdu_failure;
  EXPECT_EQ(rows.at("nodaemon/pdu")["status"], "FAIL");
  const std::string fix = rows.at("nodaemon/pdu")["fix"];
  EXPECT_NE(fix.find("correct pdu.daemon (" + farm_file_ + ":"), std::string::npos) << fix;
  EXPECT_EQ(failed_checks(rows),
            (std::map<std::string, std::string>{{"b2", "reachable"}, {"nodaemon", "pdu"}}));
  // Asked, never switched: the outlets' command never ran.
  EXPECT_FALSE(fs::exists(lab_->dir() / "power.log")) << read_file(lab_->dir() / "power.log");
  EXPECT_FALSE(fs::exists(db()));
}

TEST_F(FarmSshDoctor, BadOptionsAreOneLineAndExitTwo) {
  start(1);
  farm_file_ = lab_->write_farm(K3_FARM_RISCV_RUNNER);
  const auto unknown = doctor({"--board", "nosuch"});
  EXPECT_EQ(unknown.code, 2) << unknown.out << unknown.err;
  EXPECT_NE(unknown.err.find("--board: unknown board 'nosuch'"), std::string::npos) << unknown.err;
  const auto negative = doctor({"--min-free-mib", "-1"});
  EXPECT_EQ(negative.code, 2);
  EXPECT_NE(negative.err.find("--min-free-mib: must be 0 or more"), std::string::npos)
      << negative.err;
  EXPECT_FALSE(fs::exists(db()));
}

}  // namespace
