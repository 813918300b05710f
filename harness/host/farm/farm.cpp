#include "harness/host/farm/farm.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "harness/host/farm/holder.h"
#include "harness/host/farm/interrupt_release.h"
#include "harness/host/store/results.h"

namespace k3farm {
namespace fs = std::filesystem;

std::string new_run_uuid() {
  std::ifstream f("/proc/sys/kernel/random/uuid");
  std::string id;
  std::getline(f, id);
  return id;
}

FarmConfig Farm::load(const std::string& spec, const std::string& root) {
  std::string chosen = spec;
  if (chosen.empty()) {
    const char* env = std::getenv("K3TUNE_FARM");
    if (env != nullptr && *env != '\0')
      chosen = env;
    else if (fs::exists(root + "/configs/farm.toml"))
      chosen = root + "/configs/farm.toml";
    else
      chosen = "local";
  }
  if (chosen == "local") return builtin_local_farm(root);
  return load_farm(chosen);
}

Farm::Farm(FarmConfig config, std::string root, k3store::Connection* db, std::string run_uuid,
           const TransportFactory& transports)
    : config_(std::move(config)),
      root_(std::move(root)),
      own_db_(db != nullptr ? std::make_unique<k3store::DirectAccess>(*db) : nullptr),
      db_(own_db_.get()),
      run_uuid_(std::move(run_uuid)) {
  init(transports);
}

Farm::Farm(FarmConfig config, std::string root, k3store::DatabaseAccess& db, std::string run_uuid,
           const TransportFactory& transports)
    : config_(std::move(config)), root_(std::move(root)), db_(&db), run_uuid_(std::move(run_uuid)) {
  init(transports);
}

void Farm::init(const TransportFactory& transports) {
  for (const auto& b : config_.boards)
    states_[b.name].board = std::make_unique<Board>(config_, b, transports);
  if (db_ != nullptr)
    for (auto& [name, event] : db_->query([&](auto& c) { return board_states(c, config_.name); }))
      if (event.quarantined() && states_.count(name)) states_[name].standing = event;
}

Farm::~Farm() {
  for (auto& [name, s] : states_) {
    s.lease.reset();
    s.board->transport().close();
  }
}

std::vector<std::string> Farm::boards(const std::vector<std::string>& tags) const {
  std::vector<std::string> out;
  for (const auto& b : config_.boards) {
    bool all = true;
    for (const auto& t : tags) all = all && b.has_tag(t);
    if (all) out.push_back(b.name);
  }
  return out;
}

Farm::State& Farm::state(const std::string& board) {
  auto it = states_.find(board);
  if (it == states_.end())
    throw std::out_of_range(fmt::format("unknown board '{}' (farm {}: {})", board, config_.source,
                                        fmt::join(config_.names(), ", ")));
  return it->second;
}

const Farm::State& Farm::state(const std::string& board) const {
  return const_cast<Farm*>(this)->state(board);
}

Board& Farm::board(const std::string& name) {
  return *state(name).board;
}

bool Farm::keep_out_standing(const std::string& board) {
  std::lock_guard lock(mu_);
  State& s = state(board);
  if (!s.standing || s.board->config().quarantine_until == "healthy") return false;
  if (!s.quarantine)
    s.quarantine = QuarantineEntry{
        fault_from_string(s.standing->fault),
        fmt::format("board {}: quarantined since {} (run {}): {}; `k3tune farm release --board {}` "
                    "lets it back in",
                    board, s.standing->at, s.standing->run_uuid, s.standing->reason, board)};
  return true;
}

void Farm::lease(const std::string& board, const LeaseWait& wait) {
  if (db_ == nullptr) throw LeaseError("leasing needs the results database");
  // An earlier run's quarantine stands, unless a power cycle brings the board back
  // (power_recovery.h).
  if (keep_out_standing(board) && !power_recover(board, wait.keep_waiting))
    throw BoardQuarantined(quarantined_boards().at(board).reason);
  const auto start = std::chrono::steady_clock::now();
  bool told = false;
  for (;;) {
    try {
      State& s = state(board);
      {
        std::lock_guard lock(mu_);
        if (s.lease) return;
      }
      release_leases_on_interrupt(db_->path());  // Ctrl-C leaves no stale lease behind
      // Unlocked: the boards of a large farm take their leases at the same time, each waiting for
      // its own board's answer (one thread per board, so nobody else leases this one here).
      auto lease = std::make_unique<Lease>(config_, *s.board, *db_, run_uuid_);
      std::lock_guard lock(mu_);
      s.lease = std::move(lease);
      return;
    } catch (const LeaseBusy& e) {
      // Another controller measures on the board: wait for it (unlocked, so this run's other
      // boards go on), unless the wait is over or there is nothing left to measure.
      const double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (waited >= wait.max_s || (wait.keep_waiting && !wait.keep_waiting())) {
        if (waited < 1) throw;
        throw LeaseBusy(
            fmt::format("{} (waited {:.0f} s; --lease-wait {:g})", e.what(), waited, wait.max_s));
      }
      if (!told && wait.on_waiting)
        wait.on_waiting(fmt::format("{}; waiting for it (up to {:g} s)", e.what(), wait.max_s));
      told = true;
      std::this_thread::sleep_for(
          std::chrono::duration<double>(std::min(1.0, wait.max_s - waited)));
    } catch (const BoardError& e) {
      quarantine(board, e.fault, e.what());
      throw;
    }
  }
}

void Farm::release(const std::string& board) {
  std::lock_guard lock(mu_);
  state(board).lease.reset();
}

bool Farm::leased(const std::string& board) const {
  std::lock_guard lock(mu_);
  return state(board).lease != nullptr;
}

bool Farm::prepare(const std::string& board) {
  State& s = state(board);
  if (quarantined(board) || keep_out_standing(board)) return false;
  try {
    s.board->deploy(s.board->local_runner(root_));
  } catch (const BoardError& e) {
    quarantine(board, e.fault, e.what());
    return false;
  }
  s.prepared = probe(board).ok;
  std::lock_guard lock(mu_);
  if (s.prepared && s.standing) {  // quarantine_until = "healthy", and it is
    db_->write([row = k3store::BoardEventRow{
                    config_.name, board, k3store::now_utc_us(), k3store::BoardEvent::kRecovered, "",
                    fmt::format("probed healthy (quarantined since {}: {})", s.standing->at,
                                s.standing->reason),
                    run_uuid_, this_actor()}](auto& c) { insert_board_event(c, row); });
    s.standing.reset();
  }
  return s.prepared;
}

HealthSample Farm::probe(const std::string& board) {
  State& s = state(board);
  HealthSample h = s.board->probe();
  std::lock_guard lock(mu_);
  if (db_ != nullptr)
    db_->write([run = run_uuid_, board, ok = h.ok, json = h.to_json().dump()](auto& c) {
      insert_probe(c, run, board, ok, json);
    });
  if (!h.ok) {
    const bool unreachable = h.error.find(": unreachable") != std::string::npos ||
                             h.error.find(": host key") != std::string::npos;
    quarantine(board, unreachable ? Fault::kUnreachable : Fault::kProbeFailed, h.error);
  } else {
    s.baseline = h;
  }
  return h;
}

HealthChange Farm::recheck(const std::string& board) {
  std::optional<HealthSample> before;
  {
    std::lock_guard lock(mu_);
    before = state(board).baseline;
  }
  const HealthSample after = probe(board);
  HealthChange c;
  if (!after.ok) {
    c.reasons.push_back(after.error);
    return c;
  }
  if (!before) return c;
  const BoardConfig& cfg = state(board).board->config();
  c = compare_samples(*before, after, cfg.cpus, config_.max_temp_c);
  if (c.rebooted)
    quarantine(board, Fault::kRebooted,
               fmt::format("board {} rebooted: {}", board, fmt::join(c.reasons, "; ")));
  return c;
}

RunResult Farm::run(const std::string& board, const std::vector<std::string>& args,
                    double timeout_s, const RunOverride* override) {
  return state(board).board->run_runner(args, timeout_s, override);
}

Verdict Farm::judge(const std::string& board, const RunResult& r) {
  std::lock_guard lock(mu_);
  State& s = state(board);
  Verdict v;
  v.fault = r.fault;
  v.reason = r.reason;
  if (r.fault == Fault::kNone || r.fault == Fault::kCell) {
    s.consecutive_timeouts = 0;
  } else if (r.fault == Fault::kRunnerTimeout) {
    if (++s.consecutive_timeouts >= config_.max_timeouts)
      quarantine(board, Fault::kRepeatedTimeouts,
                 fmt::format("board {}: {} runner timeouts in a row (last: {})", board,
                             s.consecutive_timeouts, r.reason));
  } else {
    v.board_fault = true;
    quarantine(board, r.fault, r.reason);
  }
  v.quarantined = s.quarantine.has_value();
  return v;
}

void Farm::quarantine(const std::string& board, Fault fault, const std::string& reason) {
  std::lock_guard lock(mu_);
  State& s = state(board);
  if (s.quarantine) return;
  s.quarantine = QuarantineEntry{fault, reason};
  if (db_ == nullptr) return;
  db_->write(
      [q = k3store::QuarantineRow{run_uuid_, board, to_string(fault), reason, k3store::now_utc()},
       e = k3store::BoardEventRow{config_.name, board, k3store::now_utc_us(),
                                  k3store::BoardEvent::kQuarantined, to_string(fault), reason,
                                  run_uuid_, this_actor()}](auto& c) {
        k3store::Transaction tx(c);
        insert_quarantine(c, q);
        insert_board_event(c, e);
        tx.commit();
      },
      2);
}

bool Farm::quarantined(const std::string& board) const {
  std::lock_guard lock(mu_);
  return state(board).quarantine.has_value();
}

std::map<std::string, QuarantineEntry> Farm::quarantined_boards() const {
  std::lock_guard lock(mu_);
  std::map<std::string, QuarantineEntry> out;
  for (const auto& [name, s] : states_)
    if (s.quarantine) out[name] = *s.quarantine;
  return out;
}

std::vector<std::string> Farm::healthy_boards() const {
  std::lock_guard lock(mu_);
  bool any_leased = false;
  for (const auto& [name, s] : states_) any_leased = any_leased || s.lease != nullptr;
  std::vector<std::string> out;
  for (const auto& b : config_.boards) {
    const State& s = states_.at(b.name);
    if (s.prepared && !s.quarantine && (!any_leased || s.lease)) out.push_back(b.name);
  }
  return out;
}

namespace {

class BoardTarget final : public k3targets::Target {
 public:
  // `other`: another runner installed on the board (Board::install) instead of the deployed one;
  // `other_local` is its file here (its hash is the build's identity).
  BoardTarget(Farm& farm, Board& board, const std::string& root, std::string other_local = "",
              std::string other_remote = "")
      : Target(config_for(board, other_local), root),
        farm_(farm),
        board_(board),
        other_remote_(std::move(other_remote)) {}

  std::vector<std::string> command(const std::vector<std::string>& args) const override {
    std::vector<std::string> argv = board_.config().exec_prefix;
    argv.push_back(!other_remote_.empty() ? other_remote_
                   : board_.deployed()    ? board_.deployed()->remote_path
                                          : runner_path());
    argv.insert(argv.end(), args.begin(), args.end());
    return board_.transport().command(argv);
  }
  k3targets::ProcessResult run_emulated(const std::vector<std::string>& emulator,
                                        const std::map<std::string, std::string>& env,
                                        const std::vector<std::string>& args,
                                        const k3targets::ProcessOptions& opt) const override {
    return run_with(args, opt, RunOverride{emulator, env, other_remote_});
  }
  std::vector<std::string> emulator_prefix() const override {
    const auto& prefix = board_.config().exec_prefix;
    return k3targets::is_qemu_prefix(prefix) ? prefix : std::vector<std::string>{};
  }
  std::string describe() const override {
    return fmt::format("{}: board of farm {} ({}), runner {}", name(), farm_.config().name,
                       board_.transport().describe(), runner_path());
  }
  k3targets::ProcessResult run(const std::vector<std::string>& args,
                               const k3targets::ProcessOptions& opt) const override {
    return run_with(args, opt, RunOverride{std::nullopt, {}, other_remote_});
  }
  std::unique_ptr<k3targets::Target> with_runner(const std::string& local_runner) const override {
    return farm_.target(name(), local_runner, board_.install(local_runner).remote_path);
  }
  std::string place_file(const std::string& local_path) const override {
    return board_.install(local_path).remote_path;
  }

 private:
  k3targets::ProcessResult run_with(const std::vector<std::string>& args,
                                    const k3targets::ProcessOptions& opt,
                                    const RunOverride& o) const {
    const RunResult r =
        farm_.run(name(), args, opt.timeout_s > 0 ? opt.timeout_s : config_.timeout_s, &o);
    k3targets::ProcessResult p = r.process;
    if (r.fault == Fault::kRunnerTimeout) p.timed_out = true;
    return p;
  }
  static k3targets::TargetConfig config_for(const Board& b, const std::string& other_local) {
    k3targets::TargetConfig c;
    c.name = b.name();
    c.kind = b.config().kind;
    c.variant = b.config().variant;
    c.runner = other_local.empty() ? b.config().runner : other_local;
    c.timeout_s = b.config().timeout_s;
    c.defined_in = b.config().defined_in;
    return c;
  }
  Farm& farm_;
  Board& board_;
  std::string other_remote_;
};

}  // namespace

std::unique_ptr<k3targets::Target> Farm::target(const std::string& board) {
  return std::make_unique<BoardTarget>(*this, *state(board).board, root_);
}

std::unique_ptr<k3targets::Target> Farm::target(const std::string& board,
                                                const std::string& local_runner,
                                                const std::string& remote_runner) {
  return std::make_unique<BoardTarget>(*this, *state(board).board, root_, local_runner,
                                       remote_runner);
}

}  // namespace k3farm
