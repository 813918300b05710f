#include "fake_board.h"

#include <chrono>
#include <cmath>
#include <functional>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace k3farm_test {

using Clock = std::chrono::steady_clock;

struct FakeLab::Board {
  std::string name;
  FakeBoardScript script;
  std::mutex mu;
  std::set<std::string> files;  // paths on the board (runners, copies in flight)
  int cells_run = 0;
  bool lease_lock_held = false;
  int holders = 0;  // lease holders started (their "pid")
  std::string boot_id = "boot-1";
  Clock::time_point booted = Clock::now() - std::chrono::hours(1);
  bool rebooted = false;

  bool dead() const { return script.dies_after_runs >= 0 && cells_run >= script.dies_after_runs; }
  void maybe_reboot() {
    if (rebooted || script.reboots_after_runs < 0 || cells_run < script.reboots_after_runs) return;
    rebooted = true;
    boot_id = "boot-2";
    booted = Clock::now();
  }
};

namespace {

void sleep_s(double s) {
  if (s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

k3targets::ProcessResult result(int code, std::string out = "", std::string err = "") {
  k3targets::ProcessResult r;
  r.exit_code = code;
  r.out = std::move(out);
  r.err = std::move(err);
  return r;
}

k3targets::ProcessResult unreachable(const std::string& board) {
  return result(255, "", fmt::format("fake board {}: connection refused\n", board));
}

// The words after `flag` in a runner's argv ("" when absent).
std::string arg_after(const std::vector<std::string>& args, const std::string& flag) {
  for (std::size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == flag) return args[i + 1];
  return "";
}

bool has(const std::vector<std::string>& args, const std::string& flag) {
  for (const auto& a : args)
    if (a == flag) return true;
  return false;
}

// A k3bench result for one cell: the repetitions asked for, around a level that depends on the
// cell only (so boards agree), with 1% noise.
std::string cell_result(const std::vector<std::string>& args, std::uint64_t seed) {
  const int reps = std::stoi(arg_after(args, "--reps"));
  const std::string cell =
      arg_after(args, "--op") + arg_after(args, "--shape") + arg_after(args, "--params");
  const double level = 1000.0 + static_cast<double>(std::hash<std::string>()(cell) % 100000);
  const std::string given = arg_after(args, "--iterations");
  const std::int64_t iterations = given.empty() ? 16 : std::stoll(given);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, 0.01);
  nlohmann::json reps_json = nlohmann::json::array();
  double measured = 0;
  for (int r = 0; r < reps; ++r) {
    const double ns = level * std::exp(noise(rng));
    measured += ns * static_cast<double>(iterations) * 1e-9;
    reps_json.push_back({{"ns", ns}, {"cpu_ns", ns}, {"iterations", iterations}});
  }
  return nlohmann::json{{"repetitions", reps_json},
                        {"path", "fake-board"},
                        {"calibration", {{"iterations", iterations}}},
                        {"timing",
                         {{"setup_s", 0.001},
                          {"check_s", 0.0},
                          {"warmup_s", 0.001},
                          {"measured_s", measured},
                          {"total_s", measured + 0.002}}}}
      .dump();
}

class FakeHolder final : public k3farm::HeldCommand {
 public:
  FakeHolder(FakeLab::Board& b, int status) : b_(b), status_(status) {}
  ~FakeHolder() override { stop(0); }
  std::optional<std::string> read_line(double) override {
    if (status_ >= 0 || told_) return std::nullopt;
    told_ = true;
    std::lock_guard lock(b_.mu);
    return fmt::format("k3farm-lease {}", ++b_.holders);
  }
  const std::string& stderr_text() override { return err_; }
  bool running() override {
    std::lock_guard lock(b_.mu);
    return status_ < 0 && !b_.dead();
  }
  int exit_status() const override { return status_; }
  void stop(double) override {
    if (status_ >= 0) return;
    std::lock_guard lock(b_.mu);
    b_.lease_lock_held = false;
    status_ = 0;
  }
  void refuse(int status, std::string err) {
    status_ = status;
    err_ = std::move(err);
  }

 private:
  FakeLab::Board& b_;
  int status_;
  bool told_ = false;
  std::string err_;
};

class FakeTransport final : public k3farm::Transport {
 public:
  FakeTransport(FakeLab& lab, FakeLab::Board& board) : lab_(lab), b_(board) {}

  std::vector<std::string> command(const std::vector<std::string>& argv, bool) const override {
    std::vector<std::string> cmd{"fake-board", b_.name};
    cmd.insert(cmd.end(), argv.begin(), argv.end());
    return cmd;
  }

  k3targets::ProcessResult exec(const std::vector<std::string>& argv, double) const override {
    const auto start = Clock::now();
    auto r = answer(argv);
    r.wall_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
    return r;
  }

  k3targets::ProcessResult copy_to(const std::string&, const std::string& remote,
                                   double) const override {
    sleep_s(b_.script.command_latency_s);
    std::lock_guard lock(b_.mu);
    if (b_.dead()) return unreachable(b_.name);
    b_.files.insert(remote);
    return result(0);
  }

  std::optional<std::string> connection_failure(const k3targets::ProcessResult& r) const override {
    if (r.exit_code != 255) return std::nullopt;
    return fmt::format("unreachable: {}", k3targets::last_line(r.err));
  }

  std::unique_ptr<k3farm::HeldCommand> hold(const std::vector<std::string>&,
                                            const std::vector<std::string>&) const override {
    sleep_s(b_.script.command_latency_s);
    auto h = std::make_unique<FakeHolder>(b_, -1);
    std::lock_guard lock(b_.mu);
    if (b_.dead())
      h->refuse(255, fmt::format("fake board {}: connection refused\n", b_.name));
    else if (b_.lease_lock_held)
      h->refuse(75, "");
    else
      b_.lease_lock_held = true;
    return h;
  }

  std::string describe() const override { return "fake board " + b_.name; }

 private:
  // The board-side scripts are "sh -c <script> <name> args...": answered by name.
  k3targets::ProcessResult answer(const std::vector<std::string>& argv) const {
    if (argv.size() < 4 || argv[0] != "sh" || argv[1] != "-c")
      return result(127, "", "fake board: not a board script\n");
    const std::string& script = argv[3];
    const std::vector<std::string> args(argv.begin() + 4, argv.end());
    if (script == "k3farm-run") return run(args);
    sleep_s(b_.script.command_latency_s);
    std::lock_guard lock(b_.mu);
    if (b_.dead()) return unreachable(b_.name);
    if (script == "k3farm-check") {
      const std::string& path = args.at(1);
      return result(0, b_.files.count(path) ? path.substr(path.rfind('-') + 1) + "\n" : "absent\n");
    }
    if (script == "k3farm-install") {
      b_.files.erase(args.at(0));
      b_.files.insert(args.at(2));
      return result(0);
    }
    if (script == "k3farm-facts") {
      const auto up =
          std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - b_.booted).count();
      return result(0, fmt::format("uptime_s {}\nboot_id {}\nloadavg 0.10 0.05 0.01 1/100 42\n"
                                   "MemAvailable:    8000000 kB\nend\n",
                                   up, b_.boot_id));
    }
    if (script == "k3farm-lease-try") return result(b_.lease_lock_held ? 75 : 0);
    if (script == "k3farm-kill" || script == "k3farm-lease-kill") return result(0);
    return result(127, "", "fake board: unknown script " + script + "\n");
  }

  // k3farm-run: work dir, pid file, timeout, kill-after, "env", "--", NAME=value..., the runner
  // and its arguments (fake boards have no exec prefix).
  k3targets::ProcessResult run(const std::vector<std::string>& args) const {
    std::size_t i = 6;
    while (i < args.size() && args[i].find('=') != std::string::npos) ++i;
    const std::vector<std::string> runner_args(args.begin() + static_cast<long>(i) + 1, args.end());
    const bool cell = has(runner_args, "--op");
    {
      std::lock_guard lock(b_.mu);
      if (b_.dead()) return unreachable(b_.name);
    }
    if (!cell) {
      sleep_s(b_.script.command_latency_s);
      if (has(runner_args, "--list-ops")) return result(0, lab_.list_ops());
      if (has(runner_args, "--facts")) return result(0, lab_.facts());
      return result(2, "", "fake runner: unknown arguments\n");
    }
    if (b_.script.runner_hangs) {
      sleep_s(std::stod(args.at(2)));  // the board-side `timeout` ends it
      return result(124);
    }
    sleep_s(b_.script.cell_latency_s);
    std::lock_guard lock(b_.mu);
    if (b_.dead()) return unreachable(b_.name);  // died while measuring
    ++b_.cells_run;
    lab_.count_cell();
    b_.maybe_reboot();
    return result(0, cell_result(runner_args, std::hash<std::string>()(b_.name) + b_.cells_run));
  }

  FakeLab& lab_;
  FakeLab::Board& b_;
};

}  // namespace

FakeLab::FakeLab(std::string list_ops, std::string facts)
    : list_ops_(std::move(list_ops)), facts_(std::move(facts)) {}

FakeLab::~FakeLab() = default;

void FakeLab::script(const std::string& board, const FakeBoardScript& s) {
  std::lock_guard lock(mu_);
  scripts_[board] = s;
  if (boards_.count(board)) boards_[board]->script = s;
}

FakeLab::Board& FakeLab::board(const std::string& name) {
  std::lock_guard lock(mu_);
  auto& b = boards_[name];
  if (!b) {
    b = std::make_unique<Board>();
    b->name = name;
    if (scripts_.count(name)) b->script = scripts_[name];
  }
  return *b;
}

int FakeLab::cells_run(const std::string& name) {
  Board& b = board(name);
  std::lock_guard lock(b.mu);
  return b.cells_run;
}

k3farm::TransportFactory FakeLab::transports() {
  return [this](const k3farm::FarmConfig&, const k3farm::BoardConfig& config) {
    return std::make_unique<FakeTransport>(*this, board(config.name));
  };
}

}  // namespace k3farm_test
