#include "harness/host/farm/board.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>

#include <fmt/format.h>
#include <openssl/evp.h>

#include "harness/host/targets/build_presets.h"
#include "harness/host/targets/runner_facts.h"

extern char** environ;

namespace k3farm {

using k3targets::last_line;
namespace {

// Board-side scripts. Fixed text: every value reaches them as a positional argument ("$1"...), so
// nothing we pass is ever parsed as shell syntax.

// $1 runners dir, $2 runner path: prints the runner's sha256, or "absent".
constexpr const char* kCheckScript = R"sh(mkdir -p -- "$1" || exit 1
[ -f "$2" ] || { echo absent; exit 0; }
s=$(sha256sum < "$2") || exit 1
echo "${s%% *}")sh";

// $1 copied file, $2 expected sha256, $3 final path: verifies the copy on the board, then moves it
// into place (rename: a concurrent reader sees the old file or the new one, never half of one).
constexpr const char* kInstallScript = R"sh(chmod 0755 "$1" || exit 1
s=$(sha256sum < "$1") || exit 1
s=${s%% *}
if [ "$s" != "$2" ]; then rm -f "$1"; echo "copied runner has sha256 $s, expected $2" >&2; exit 3; fi
mv -f "$1" "$3")sh";

// $1 work dir, $2 pid file, $3 timeout, $4 kill-after, then the command. `timeout` puts itself
// and the command in a new process group and signals the whole group when time is up; the group
// id goes to the pid file so the controller can kill the group if it gives up first.
constexpr const char* kRunScript = R"sh(cd "$1" || exit 126
pidfile=$2; t=$3; k=$4; shift 4
timeout -k "$k" "$t" "$@" &
p=$!
echo "$p" > "$pidfile"
wait "$p"; rc=$?
rm -f "$pidfile"
exit "$rc")sh";

// $1 pid file: kills the recorded process group (a run the controller gave up on).
constexpr const char* kKillScript = R"sh(p=$(cat "$1" 2>/dev/null) || exit 0
kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null
rm -f "$1"
exit 0)sh";

// $1 "1" to honour test hooks, $2 work dir. "key value..." lines (health.cpp parses them).
constexpr const char* kFactsScript = R"sh(read -r up rest < /proc/uptime; up=${up%%.*}
if [ "$1" = 1 ] && [ -r "$2/test-hooks/uptime_offset_s" ]; then
  off=$(cat "$2/test-hooks/uptime_offset_s")
  case $off in ''|*[!0-9-]*) off=0 ;; esac
  up=$((up + off))
fi
echo "uptime_s $up"
echo "boot_id $(cat /proc/sys/kernel/random/boot_id 2>/dev/null)"
echo "loadavg $(cat /proc/loadavg)"
grep -m1 '^MemAvailable:' /proc/meminfo
for z in /sys/class/thermal/thermal_zone*; do
  [ -r "$z/temp" ] && echo "thermal ${z##*/} $(cat "$z/type" 2>/dev/null | tr ' ' _) $(cat "$z/temp")"
done
for c in /sys/devices/system/cpu/cpu[0-9]*; do
  f=$c/cpufreq
  [ -r "$f/scaling_cur_freq" ] && echo "cpufreq ${c##*/cpu} $(cat "$f/scaling_governor") $(cat "$f/scaling_cur_freq") $(cat "$f/scaling_max_freq") $(cat "$f/cpuinfo_max_freq")"
done
grep -m1 '^marchid' /proc/cpuinfo
if [ "$1" = 1 ] && [ -r "$2/test-hooks/extra_facts" ]; then cat "$2/test-hooks/extra_facts"; fi
echo end)sh";

constexpr double kKillAfterS = 2;

bool env_name_passed(const std::string& name) {
  static const std::regex passed(R"((K3BENCH|K3)_[A-Za-z0-9_]+)");
  return std::regex_match(name, passed);
}

std::string first_line(const std::string& s) {
  return s.substr(0, s.find('\n'));
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

const char* to_string(Fault f) {
  switch (f) {
    case Fault::kNone:
      return "none";
    case Fault::kCell:
      return "cell";
    case Fault::kRunnerTimeout:
      return "runner-timeout";
    case Fault::kUnreachable:
      return "unreachable";
    case Fault::kHostKey:
      return "host-key";
    case Fault::kUnresponsive:
      return "unresponsive";
    case Fault::kRebooted:
      return "rebooted";
    case Fault::kProbeFailed:
      return "probe-failed";
    case Fault::kRepeatedTimeouts:
      return "repeated-timeouts";
  }
  return "?";
}

Fault fault_from_string(const std::string& name) {
  for (Fault f :
       {Fault::kNone, Fault::kCell, Fault::kRunnerTimeout, Fault::kUnreachable, Fault::kHostKey,
        Fault::kUnresponsive, Fault::kRebooted, Fault::kProbeFailed, Fault::kRepeatedTimeouts})
    if (name == to_string(f)) return f;
  return Fault::kProbeFailed;
}

bool is_board_fault(Fault f) {
  return f != Fault::kNone && f != Fault::kCell && f != Fault::kRunnerTimeout;
}

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot read", path));
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  char buf[1 << 16];
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0)
    EVP_DigestUpdate(ctx, buf, static_cast<std::size_t>(in.gcount()));
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

Board::Board(const FarmConfig& farm, BoardConfig config, const TransportFactory& transports)
    : farm_(farm),
      config_(std::move(config)),
      transport_(transports ? transports(farm_, config_) : make_transport(farm_, config_)) {}

std::string Board::local_runner(const std::string& root) const {
  if (!config_.runner.empty()) return config_.runner;
  return k3targets::variant_runner(root, config_.variant);
}

k3targets::ProcessResult Board::exec(const std::vector<std::string>& argv, double timeout_s) const {
  return transport_->exec(argv, timeout_s);
}

Fault Board::classify(const k3targets::ProcessResult& r, std::string* reason) const {
  if (r.ok()) return Fault::kNone;
  if (r.spawn_failed)
    throw ControllerFailure(fmt::format("controller: cannot start a command for board {}: {}",
                                        name(), last_line(r.err)));
  if (auto why = transport_->connection_failure(r)) {
    *reason = fmt::format("board {}: {}", name(), *why);
    return why->rfind("host key", 0) == 0 ? Fault::kHostKey : Fault::kUnreachable;
  }
  if (r.timed_out) {
    *reason = fmt::format("board {}: no answer (local deadline)", name());
    return Fault::kUnresponsive;
  }
  *reason = r.failure_reason(0);
  return Fault::kCell;
}

DeployResult Board::deploy(const std::string& local_runner_path) {
  deployed_ = install(local_runner_path);
  return *deployed_;
}

DeployResult Board::install(const std::string& local_runner_path) const {
  DeployResult d;
  try {
    d.sha256 = sha256_file(local_runner_path);
  } catch (const std::runtime_error& e) {
    throw BoardError(Fault::kProbeFailed,
                     fmt::format("runner {}: {} (build it: k3tune build --variant {})",
                                 local_runner_path, e.what(), config_.variant));
  }
  const std::string dir = config_.work_dir + "/runners";
  d.remote_path = dir + "/k3bench-" + d.sha256;
  const double t = farm_.connect_timeout_s + 60;
  auto check = [&](const k3targets::ProcessResult& r, const char* step) {
    std::string why;
    const Fault f = classify(r, &why);
    if (f != Fault::kNone)
      throw BoardError(
          f == Fault::kCell ? Fault::kProbeFailed : f,
          f == Fault::kCell ? fmt::format("board {}: deploy ({}): {}", name(), step, why) : why);
  };
  const auto have = exec({"sh", "-c", kCheckScript, "k3farm-check", dir, d.remote_path}, t);
  check(have, "check");
  const std::string remote_sha = first_line(have.out);
  if (remote_sha == d.sha256) {
    d.why = "present, sha256 verified on the board";
  } else {
    d.copied = true;
    d.why = remote_sha == "absent"
                ? "absent"
                : fmt::format("sha256 mismatch (board had {}); replaced", remote_sha.substr(0, 16));
    static std::atomic<int> seq{0};
    const std::string part = fmt::format("{}.part-{}-{}", d.remote_path, getpid(), seq++);
    check(transport_->copy_to(local_runner_path, part, t + 600), "copy");
    check(exec({"sh", "-c", kInstallScript, "k3farm-install", part, d.sha256, d.remote_path}, t),
          "verify");
  }
  return d;
}

std::map<std::string, std::string> Board::runner_env() const {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv(*e);
    const auto eq = kv.find('=');
    if (eq != std::string::npos && env_name_passed(kv.substr(0, eq)))
      env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : config_.env) env[k] = v;
  return env;
}

RunResult Board::run_runner(const std::vector<std::string>& args, double timeout_s,
                            const RunOverride* override) const {
  RunResult out;
  if (!deployed_) {
    out.fault = Fault::kProbeFailed;
    out.reason = fmt::format("board {}: no runner deployed", name());
    out.process.spawn_failed = true;
    return out;
  }
  static std::atomic<int> seq{0};
  const std::string pidfile = fmt::format("{}/run-{}-{}.pid", config_.work_dir, getpid(), seq++);
  std::vector<std::string> argv{"sh",
                                "-c",
                                kRunScript,
                                "k3farm-run",
                                config_.work_dir,
                                pidfile,
                                fmt::format("{:g}", timeout_s),
                                fmt::format("{:g}", kKillAfterS),
                                "env",
                                "--"};
  for (const auto& [k, v] : runner_env()) argv.push_back(k + "=" + v);
  if (override != nullptr)
    for (const auto& [k, v] : override->env) argv.push_back(k + "=" + v);
  const auto& prefix =
      override != nullptr && override->emulator ? *override->emulator : config_.exec_prefix;
  argv.insert(argv.end(), prefix.begin(), prefix.end());
  argv.push_back(override != nullptr && !override->runner.empty() ? override->runner
                                                                  : deployed_->remote_path);
  argv.insert(argv.end(), args.begin(), args.end());
  const double local_deadline = timeout_s + kKillAfterS + farm_.connect_timeout_s + 10;
  out.process = exec(argv, local_deadline);
  const auto& r = out.process;
  if (r.ok()) return out;
  out.fault = classify(r, &out.reason);
  if (out.fault == Fault::kUnresponsive) {
    // We gave up before the board did: kill the board-side group ourselves.
    const auto kill =
        exec({"sh", "-c", kKillScript, "k3farm-kill", pidfile}, farm_.connect_timeout_s + 5);
    if (kill.ok()) {
      out.fault = Fault::kRunnerTimeout;
      out.reason =
          fmt::format("timeout: no result after {:g} s; killed on the board", local_deadline);
    }
    return out;
  }
  if (out.fault == Fault::kCell &&
      (r.exit_code == 124 || (r.exit_code == 137 && r.wall_ns >= timeout_s * 1e9))) {
    out.fault = Fault::kRunnerTimeout;
    out.reason =
        fmt::format("timeout: no exit after {:g} s (process group killed on the board)", timeout_s);
  } else if (out.fault == Fault::kCell) {
    out.reason = r.failure_reason(local_deadline);
  }
  return out;
}

HealthSample Board::probe() const {
  HealthSample s;
  s.taken_at_s = unix_now();
  const auto facts = exec(
      {"sh", "-c", kFactsScript, "k3farm-facts", config_.test_hooks ? "1" : "0", config_.work_dir},
      farm_.connect_timeout_s + 20);
  std::string why;
  if (const Fault f = classify(facts, &why); f != Fault::kNone) {
    s.error = f == Fault::kCell ? fmt::format("board {}: facts script: {}", name(), why) : why;
    return s;
  }
  if (facts.out.find("\nend") == std::string::npos) {
    s.error = fmt::format("board {}: facts script output incomplete", name());
    return s;
  }
  parse_facts(facts.out, s);
  if (s.uptime_s < 0) {
    s.error = fmt::format("board {}: no uptime in the facts", name());
    return s;
  }
  if (deployed_) {
    const auto facts =
        run_runner(k3targets::runner_facts_args(), std::min(config_.timeout_s, 300.0));
    if (!facts.ok()) {
      s.error = fmt::format("board {}: runner probe failed: {}", name(), facts.reason);
      return s;
    }
    try {
      apply_runner_facts(k3targets::parse_runner_facts(facts.process.out), s);
    } catch (const k3targets::FactsError& e) {
      s.error = fmt::format("board {}: runner probe: {}", name(), last_line(e.what()));
      return s;
    }
  }
  for (const auto& sign : throttle_signs(s, config_.cpus, farm_.max_temp_c))
    s.warnings.push_back(sign);
  s.ok = true;
  return s;
}

}  // namespace k3farm
