#include "harness/host/farm/board_check.h"

#include <algorithm>
#include <optional>
#include <regex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/host/farm/board.h"
#include "harness/host/farm/board_doctor_facts.h"
#include "harness/host/farm/health.h"
#include "harness/host/farm/pdu_client.h"

namespace k3farm {
namespace {

// The checks in the order they are printed; a board that stops answering skips the rest.
const std::vector<std::string> kChecks = {"reachable", "host-key",  "runner", "marchid", "vlenb",
                                          "tcm",       "ai-thread", "pin",    "cpufreq", "thermal",
                                          "disk",      "perf",      "pdu"};

std::string lowercase(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Ascending CPUs as the inventory writes them: "0,2-5".
std::string cpu_list(const std::vector<int>& cpus) {
  if (cpus.empty()) return "-";
  std::vector<std::string> runs;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    runs.push_back(j == i ? std::to_string(cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]));
    i = j + 1;
  }
  return fmt::format("{}", fmt::join(runs, ","));
}

// taskset names the pid it failed on; CPUs failing alike read as one.
std::string without_pid(const std::string& error) {
  static const std::regex pid(R"(pid \d+'s )");
  return std::regex_replace(error, pid, "");
}

struct Checker {
  const FarmConfig& farm;
  const BoardConfig& cfg;
  const BoardCheckOptions& opt;
  Board board;
  bool k3 = false;
  std::vector<CheckRow> rows;

  void add(const std::string& check, CheckStatus status, bool required, std::string detail,
           std::string fix = "") {
    rows.push_back({cfg.name, check, status, required, std::move(detail), std::move(fix)});
  }
  // A failed check: FAIL when a night needs it, else warn.
  void bad(const std::string& check, bool required, std::string detail, std::string fix) {
    add(check, required ? CheckStatus::kFail : CheckStatus::kWarn, required, std::move(detail),
        std::move(fix));
  }
  bool done(const std::string& check) const {
    return std::any_of(rows.begin(), rows.end(), [&](const auto& r) { return r.check == check; });
  }
  // Every check of the board not yet reported, skipped for `why`, in kChecks order (the PDU's
  // is not the board's: it always runs).
  void skip_rest(const std::string& why) {
    for (const auto& c : kChecks)
      if (c != "pdu" && !done(c)) add(c, CheckStatus::kSkip, false, why);
  }
  std::string login() const { return (cfg.user.empty() ? "" : cfg.user + "@") + cfg.host; }
  std::string ssh_hint() const { return fmt::format("ssh -p {} {}", cfg.port, login()); }
  // How known_hosts names the board: "host", or "[host]:port" off port 22.
  std::string known_name() const {
    return cfg.port == 22 ? cfg.host : fmt::format("[{}]:{}", cfg.host, cfg.port);
  }
};

void host_key_failed(Checker& c, const std::string& why) {
  const std::string add = fmt::format(
      "compare the key with the board's console (ssh-keygen -lf "
      "/etc/ssh/ssh_host_ed25519_key.pub), then: ssh-keyscan -p {} {} >> {}",
      c.cfg.port, c.cfg.host, c.cfg.known_hosts);
  const bool changed = why.find("changed") != std::string::npos;
  c.add("reachable", CheckStatus::kOk, true,
        fmt::format("{} answers (its host key was refused)", c.board.transport().describe()));
  c.bad("host-key", true, why,
        changed ? fmt::format("if the board was reinstalled: ssh-keygen -R '{}' -f {}; then {}",
                              c.known_name(), c.cfg.known_hosts, add)
                : add);
}

// reachable and host-key. False when the board cannot be used at all.
bool check_connection(Checker& c) {
  const auto r = c.board.exec({"true"}, c.farm.connect_timeout_s + 10);
  std::string why;
  const Fault f = c.board.classify(r, &why);
  const bool ssh = c.cfg.kind == k3targets::TargetKind::kSsh;
  if (f == Fault::kNone) {
    c.add("reachable", CheckStatus::kOk, true,
          fmt::format("{} answers", c.board.transport().describe()));
    if (ssh)
      c.add("host-key", CheckStatus::kOk, true, fmt::format("matches {}", c.cfg.known_hosts));
    else
      c.add("host-key", CheckStatus::kSkip, false, "local board: no ssh");
    return true;
  }
  if (f == Fault::kHostKey) {
    host_key_failed(c, why);
    return false;
  }
  if (why.find(": login to ") != std::string::npos) {
    c.bad("reachable", true, why,
          fmt::format("append {}.pub to ~/.ssh/authorized_keys of the board's user (ssh-copy-id "
                      "-i {} -p {} {})",
                      c.cfg.identity, c.cfg.identity, c.cfg.port, c.login()));
    c.add("host-key", CheckStatus::kOk, true,
          fmt::format("matches {} (checked before the login)", c.cfg.known_hosts));
    return false;
  }
  c.bad("reachable", true,
        f == Fault::kUnresponsive ? fmt::format("board {}: no answer within {:g} s", c.cfg.name,
                                                c.farm.connect_timeout_s + 10)
                                  : why,
        fmt::format("check the board's power, network and sshd; then `{} true` must work "
                    "(connect timeout {:g} s: [farm] connect_timeout_s)",
                    c.ssh_hint(), c.farm.connect_timeout_s));
  return false;
}

// One small call of a kernel with its accuracy check: the runner does more than describe itself.
const std::vector<std::string> kSmokeCall = {
    "--op", "residual_add", "--shape", "rows=1,dim=256", "--reps", "1", "--iterations",
    "1",    "--warmup",     "0",       "--json"};

// The command line that runs the board's runner at `remote` with `args`, from here.
std::string runner_command(const Checker& c, const std::string& remote, const std::string& args) {
  const auto& prefix = c.cfg.exec_prefix;
  const bool ssh = c.cfg.kind == k3targets::TargetKind::kSsh;
  return fmt::format("{}{}{} {}", ssh ? c.ssh_hint() + " " : "",
                     prefix.empty() ? "" : fmt::format("{} ", fmt::join(prefix, " ")), remote,
                     args);
}

std::string by_hand(const Checker& c, const std::string& remote, const std::string& args) {
  return fmt::format(
      "run it by hand: {} (a dynamically linked variant needs the board's libc and libstdc++; "
      "variant \"rvv\" is static)",
      runner_command(c, remote, args));
}

// A deploy that failed: no local runner (build it, or the inventory names one that is not there),
// or the copy on the board failed.
std::string deploy_fix(const Checker& c, const std::string& error) {
  if (error.find("build it:") == std::string::npos)
    return fmt::format("check that {} on the board is writable and has space", c.cfg.work_dir);
  if (!c.cfg.runner.empty())
    return fmt::format(
        "build the runner that runner = \"{}\" names ({}), or drop the key to "
        "deploy variant {}'s (k3tune build --variant {})",
        c.cfg.runner, c.cfg.defined_in, c.cfg.variant, c.cfg.variant);
  return fmt::format("k3tune build --variant {}", c.cfg.variant);
}

// Deploys the runner, probes the board (which runs the runner's --facts) and makes one call. The
// sample is returned even when the runner failed: the facts script's part is still good then.
// `runner_ran`: the runner's facts (vlenb, TCM) were read.
HealthSample check_runner(Checker& c, bool* runner_ran) {
  std::optional<DeployResult> d;
  std::string deploy_error;
  try {
    d = c.board.deploy(c.board.local_runner(c.opt.root));
  } catch (const BoardError& e) {
    deploy_error = e.what();
  }
  HealthSample s = c.board.probe();
  *runner_ran = d && s.ok;
  if (!d) {
    c.bad("runner", true, deploy_error, deploy_fix(c, deploy_error));
  } else if (!s.ok) {
    c.bad("runner", true, s.error, by_hand(c, d->remote_path, "--facts"));
  } else if (const auto call = c.board.run_runner(kSmokeCall, std::min(c.cfg.timeout_s, 120.0));
             !call.ok()) {
    c.bad("runner", true,
          fmt::format("board {}: the runner describes itself but one residual_add call failed: {}",
                      c.cfg.name, call.reason),
          by_hand(c, d->remote_path, fmt::format("{}", fmt::join(kSmokeCall, " "))));
  } else {
    c.add("runner", CheckStatus::kOk, true,
          fmt::format("{} runner k3bench-{} {}; runs: k3bench {}, one residual_add call checked",
                      c.cfg.variant, d->sha256.substr(0, 12),
                      d->copied ? "copied (" + d->why + ")" : "present", s.runner_version));
  }
  return s;
}

void check_marchid_per_cpu(Checker& c, const std::map<int, std::string>& ids) {
  std::vector<int> a100, wrong;
  for (const auto& [cpu, id] : ids)
    if (lowercase(id) == kA100Marchid) a100.push_back(cpu);
  const std::string fix = fmt::format("set cpus = \"{}\" (the A100 CPUs) in the inventory entry {}",
                                      cpu_list(a100), c.cfg.defined_in);
  if (c.cfg.cpus.empty()) {
    if (a100.empty())
      c.bad("marchid", true,
            fmt::format("no CPU shows the A100's marchid {} (CPU {} has {})", kA100Marchid,
                        ids.begin()->first, ids.begin()->second),
            "a board tagged k3 must have A100 cores: check the board and its kernel, or remove "
            "the k3 tag");
    else
      c.add("marchid", CheckStatus::kOk, true,
            fmt::format("A100 ({}) on CPUs {}; cpus unset: the runner pins there itself",
                        kA100Marchid, cpu_list(a100)));
    return;
  }
  for (int cpu : c.cfg.cpus)
    if (!ids.count(cpu) || lowercase(ids.at(cpu)) != kA100Marchid) wrong.push_back(cpu);
  if (wrong.empty()) {
    c.add("marchid", CheckStatus::kOk, true,
          fmt::format("CPUs {} are A100 ({})", c.cfg.cpus_text, kA100Marchid));
    return;
  }
  const int w = wrong.front();
  c.bad("marchid", true,
        fmt::format("CPU {} of cpus {} has marchid {}, not an A100's ({})", w, c.cfg.cpus_text,
                    ids.count(w) ? ids.at(w) : "none", kA100Marchid),
        a100.empty() ? "a board tagged k3 must have A100 cores: check the board, or remove the "
                       "k3 tag"
                     : fix);
}

void check_marchid(Checker& c, const HealthSample& s, const DoctorFacts* f) {
  const std::map<int, std::string> ids = f ? f->cpu_marchid : std::map<int, std::string>{};
  if (!c.k3) {
    c.add("marchid", CheckStatus::kInfo, false,
          fmt::format("{} (not tagged k3: not checked)", s.marchid.empty() ? "none" : s.marchid));
    return;
  }
  if (!ids.empty()) return check_marchid_per_cpu(c, ids);
  // No per-CPU marchid (qemu-user, x86, a kernel that prints none): the probe's, if any.
  if (lowercase(s.marchid) == kA100Marchid)
    c.add("marchid", CheckStatus::kOk, true, fmt::format("{} (A100)", s.marchid));
  else
    c.bad("marchid", true,
          s.marchid.empty()
              ? "no marchid in /proc/cpuinfo or the runner's facts"
              : fmt::format("marchid {} is not an A100's ({})", s.marchid, kA100Marchid),
          "a board tagged k3 must show the A100 marchid: check the board and its kernel, or "
          "remove the k3 tag");
}

void check_vlenb(Checker& c, const HealthSample& s, bool runner_ran) {
  if (!runner_ran) return c.add("vlenb", CheckStatus::kSkip, false, "the runner did not run");
  const std::string found =
      s.vlenb ? fmt::format("vlenb {} (VLEN {})", *s.vlenb, *s.vlenb * 8) : "no RVV in the runner";
  if (!c.k3) return c.add("vlenb", CheckStatus::kInfo, false, found + " (not tagged k3)");
  if (s.vlenb == kA100Vlenb) return c.add("vlenb", CheckStatus::kOk, true, found);
  c.bad("vlenb", true, fmt::format("{}, not {} (an A100's VLEN 1024)", found, kA100Vlenb),
        fmt::format("the runner reads vlenb on an A100 core after the opt-in: see ai-thread and "
                    "pin; variant {} must be a riscv64 one (rvv, rvv-dynamic, ime2...)",
                    c.cfg.variant));
}

void check_tcm(Checker& c, const HealthSample& s, bool runner_ran) {
  if (!runner_ran) return c.add("tcm", CheckStatus::kSkip, false, "the runner did not run");
  const std::string detail = fmt::format("{} ({})", s.tcm_backend, s.tcm_reason);
  if (!s.tcm_stale_blocks.empty())
    return c.bad(
        "tcm", false,
        fmt::format("{}; stale locks on blocks {}", detail,
                    nlohmann::json(s.tcm_stale_blocks).dump()),
        fmt::format("a killed run left them; with nothing running on the board: {}",
                    runner_command(c, c.board.deployed()->remote_path, "--tcm-force-release all")));
  if (s.tcm_backend == "real") return c.add("tcm", CheckStatus::kOk, false, detail);
  if (!c.k3) return c.add("tcm", CheckStatus::kInfo, false, detail + "; not tagged k3");
  c.bad("tcm", false, detail + "; the emulated TCM will be used",
        "install the vendor library libspine_tcm.so on the board (or name it: K3_TCM_LIBRARY in "
        "the board's env) and load its TCM driver");
}

void check_ai_thread(Checker& c, const DoctorFacts& f) {
  if (!c.k3)
    return c.add(
        "ai-thread", CheckStatus::kInfo, false,
        fmt::format("/proc/set_ai_thread {} (not tagged k3: threads run unpinned)", f.ai_thread));
  if (f.ai_thread == "writable")
    return c.add("ai-thread", CheckStatus::kOk, true,
                 "/proc/set_ai_thread writable (threads opt in to the A100 cores)");
  c.bad("ai-thread", true,
        f.ai_thread == "absent" ? "no /proc/set_ai_thread: threads cannot opt in to the A100 cores"
                                : "/proc/set_ai_thread is not writable by the board's user",
        f.ai_thread == "absent"
            ? "boot the SpacemiT kernel that provides /proc/set_ai_thread"
            : "make it writable at boot (chmod 0666 /proc/set_ai_thread, e.g. a systemd unit)");
}

void check_pin(Checker& c, const DoctorFacts& f) {
  const bool required = c.k3;  // off a K3 the runner leaves threads unpinned
  if (!f.taskset)
    return c.bad("pin", required, "no taskset on the board: pinning not checked",
                 "apt-get install util-linux");
  std::vector<int> pinned;
  std::map<std::string, std::vector<int>> by_error;
  for (const auto& [cpu, error] : f.pin_errors)
    if (error.empty())
      pinned.push_back(cpu);
    else
      by_error[without_pid(error)].push_back(cpu);
  std::vector<std::string> failed;
  for (const auto& [error, cpus] : by_error)
    failed.push_back(
        fmt::format("CPU{} {}: {}", cpus.size() > 1 ? "s" : "", cpu_list(cpus), error));
  if (failed.empty())
    return c.add("pin", CheckStatus::kOk, required,
                 fmt::format("CPUs {} take an affinity{}", cpu_list(pinned),
                             f.ai_thread == "writable" ? " after the opt-in" : ""));
  c.bad("pin", required, fmt::format("{}", fmt::join(failed, "; ")),
        c.cfg.cpus.empty()
            ? "see ai-thread; an offline CPU: echo 1 > /sys/devices/system/cpu/cpuN/online"
            : fmt::format("cpus = \"{}\" ({}) must name online CPUs of the board; see ai-thread",
                          c.cfg.cpus_text, c.cfg.defined_in));
}

bool on_board_cpus(const BoardConfig& cfg, int cpu) {
  return cfg.cpus.empty() || std::count(cfg.cpus.begin(), cfg.cpus.end(), cpu) > 0;
}

void check_cpufreq(Checker& c, const HealthSample& s) {
  std::vector<int> cpus, slow;
  long long lo = 0, hi = 0, max = 0;
  for (const auto& f : s.cpufreq) {
    if (!on_board_cpus(c.cfg, f.cpu)) continue;
    cpus.push_back(f.cpu);
    if (f.governor != "performance") slow.push_back(f.cpu);
    lo = cpus.size() == 1 ? f.cur_khz : std::min(lo, f.cur_khz);
    hi = std::max(hi, f.cur_khz);
    max = std::max(max, f.max_khz);
  }
  if (cpus.empty())
    return c.add("cpufreq", CheckStatus::kInfo, false,
                 "no cpufreq in sysfs (a VM, or a kernel without it): frequency not checked");
  const std::string now =
      lo == hi ? fmt::format("current {} MHz, maximum {} MHz", lo / 1000, max / 1000)
               : fmt::format("current {}-{} MHz, maximum {} MHz", lo / 1000, hi / 1000, max / 1000);
  std::vector<std::string> signs;
  for (const auto& sign : throttle_signs(s, c.cfg.cpus, c.farm.max_temp_c))
    if (sign.rfind("cpu", 0) == 0) signs.push_back(sign);
  if (!slow.empty())
    return c.bad("cpufreq", false,
                 fmt::format("governor {} on CPUs {} (not performance); {}",
                             std::find_if(s.cpufreq.begin(), s.cpufreq.end(),
                                          [&](const auto& f) { return f.cpu == slow.front(); })
                                 ->governor,
                             cpu_list(slow), now),
                 "cpupower frequency-set -g performance (or write performance to "
                 "/sys/devices/system/cpu/cpuN/cpufreq/scaling_governor at boot)");
  if (!signs.empty())
    return c.bad("cpufreq", false, fmt::format("{}; {}", fmt::join(signs, "; "), now),
                 "lift the frequency cap (scaling_max_freq) and cool the board");
  c.add("cpufreq", CheckStatus::kOk, false,
        fmt::format("governor performance on CPUs {}; {}", cpu_list(cpus), now));
}

void check_thermal(Checker& c, const HealthSample& s, const DoctorFacts& f) {
  if (f.thermal_zones == 0)
    return c.bad("thermal", false,
                 "no thermal zones under /sys/class/thermal: heat throttling goes unseen",
                 "enable the SoC's thermal driver in the board's kernel");
  if (!f.thermal_unreadable.empty())
    return c.bad("thermal", false,
                 fmt::format("{} of {} zones unreadable: {}", f.thermal_unreadable.size(),
                             f.thermal_zones, fmt::join(f.thermal_unreadable, ", ")),
                 "make /sys/class/thermal/thermal_zone*/temp readable by the board's user");
  auto hottest = std::max_element(s.thermal_c.begin(), s.thermal_c.end(),
                                  [](const auto& a, const auto& b) { return a.second < b.second; });
  if (hottest == s.thermal_c.end())
    return c.bad("thermal", false, "the probe read no zone temperature",
                 "make /sys/class/thermal/thermal_zone*/temp readable by the board's user");
  const std::string detail =
      fmt::format("{} zones readable, hottest {} at {:.1f} C (limit {:g} C)", f.thermal_zones,
                  hottest->first, hottest->second, c.farm.max_temp_c);
  if (hottest->second >= c.farm.max_temp_c)
    return c.bad("thermal", false, detail, "cool the board (fan, airflow) before a night");
  c.add("thermal", CheckStatus::kOk, false, detail);
}

void check_disk(Checker& c, const DoctorFacts& f) {
  if (f.disk_free_kib < 0)
    return c.bad("disk", true, fmt::format("df gave no free space for {}", c.cfg.work_dir),
                 fmt::format("{} df -Pk {}", c.ssh_hint(), c.cfg.work_dir));
  const long long mib = f.disk_free_kib / 1024;
  const std::string detail =
      fmt::format("{} MiB free in {} (a night needs {} MiB)", mib, f.disk_path, c.opt.min_free_mib);
  if (mib >= c.opt.min_free_mib) return c.add("disk", CheckStatus::kOk, true, detail);
  c.bad(
      "disk", true, detail,
      fmt::format("free space on the board's filesystem of {} (runners of old builds: {}/runners)",
                  c.cfg.work_dir, c.cfg.work_dir));
}

// Counters are optional (a run records them when they open; the inventory has no way to ask for
// them), so the policy is information, with the setting that opens them.
void check_perf(Checker& c, const DoctorFacts& f) {
  const std::string detail = fmt::format("perf_event_paranoid {}, perf_user_access {}",
                                         f.perf_event_paranoid, f.perf_user_access);
  if (f.perf_event_paranoid == "absent")
    return c.add("perf", CheckStatus::kInfo, false,
                 detail + ": no perf events in this kernel, no counters");
  int level = 3;
  try {
    level = std::stoi(f.perf_event_paranoid);
  } catch (const std::exception&) {
  }
  const bool open = level <= 2;  // user-space-only events open at 2 (perf_counters.h)
  c.add("perf", CheckStatus::kInfo, false,
        detail + (open ? ": user-space counters open" : ": counters will not open"),
        open ? "" : "sysctl -w kernel.perf_event_paranoid=2 (if counters are wanted)");
}

// The PDU outlet answers. It does not depend on the board: a dead board is when it matters, so it
// is checked whether or not the board was reached. pdudaemon switches on any request that names
// an outlet, so only the daemon is asked; a named outlet whose daemon does not answer fails, since
// the inventory promises a recovery the night would not get.
void check_pdu_outlet(Checker& c) {
  if (!c.cfg.pdu)
    return c.add("pdu", CheckStatus::kInfo, false,
                 "no PDU outlet named: a dead board stays out until `k3tune farm release`");
  const PduOutlet& o = *c.cfg.pdu;
  const std::string why = check_pdu_daemon(o, c.farm.connect_timeout_s);
  if (!why.empty())
    return c.bad(
        "pdu", true, "pdudaemon does not answer: " + why,
        fmt::format("start pdudaemon there (pdudaemon --conf FILE with its HTTP listener), "
                    "or correct pdu.daemon ({})",
                    o.defined_in.empty() ? c.cfg.defined_in : o.defined_in));
  c.add("pdu", CheckStatus::kOk, true,
        fmt::format("pdudaemon at {} answers; PDU {} outlet {} not switched to check it "
                    "(a reboot is off {:g} s, then SSH within {:g} s)",
                    o.daemon, o.name, o.outlet, o.delay_s, o.ssh_wait_s));
}

void check_board_facts(Checker& c, const HealthSample& s, bool runner_ran) {
  std::string why;
  const auto f = read_doctor_facts(c.board, c.cfg.cpus, c.farm.connect_timeout_s + 30, &why);
  check_marchid(c, s, f ? &*f : nullptr);
  check_vlenb(c, s, runner_ran);
  check_tcm(c, s, runner_ran);
  if (!f) {
    c.skip_rest(why);
    return;
  }
  check_ai_thread(c, *f);
  check_pin(c, *f);
  check_cpufreq(c, s);
  check_thermal(c, s, *f);
  check_disk(c, *f);
  check_perf(c, *f);
}

}  // namespace

const char* to_string(CheckStatus s) {
  switch (s) {
    case CheckStatus::kOk:
      return "ok";
    case CheckStatus::kFail:
      return "FAIL";
    case CheckStatus::kWarn:
      return "warn";
    case CheckStatus::kInfo:
      return "info";
    case CheckStatus::kSkip:
      return "skip";
  }
  return "?";
}

nlohmann::json CheckRow::to_json() const {
  return {{"board", board},       {"check", check},   {"status", to_string(status)},
          {"required", required}, {"detail", detail}, {"fix", fix}};
}

bool night_ready(const std::vector<CheckRow>& rows) {
  return std::none_of(rows.begin(), rows.end(),
                      [](const auto& r) { return r.status == CheckStatus::kFail; });
}

std::vector<CheckRow> check_board(const FarmConfig& farm, const BoardConfig& board,
                                  const BoardCheckOptions& options,
                                  const TransportFactory& transports) {
  Checker c{farm, board, options, Board(farm, board, transports), board.has_tag(kK3Tag), {}};
  if (!check_connection(c)) {
    c.skip_rest("board not reached");
  } else {
    bool runner_ran = false;
    const HealthSample s = check_runner(c, &runner_ran);
    if (s.uptime_s < 0)
      c.skip_rest("the board's facts could not be read");
    else
      check_board_facts(c, s, runner_ran);
  }
  c.board.transport().close();
  check_pdu_outlet(c);
  return c.rows;
}

}  // namespace k3farm
