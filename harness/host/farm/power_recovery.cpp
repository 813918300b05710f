// Farm::power_recover and its steps (power_recovery.h); the rest of Farm is farm.cpp.
#include "harness/host/farm/power_recovery.h"

#include <chrono>
#include <ctime>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/common/sys/elapsed.h"
#include "harness/host/farm/farm.h"
#include "harness/host/farm/pdu_client.h"
#include "harness/host/store/results.h"

namespace k3farm {
namespace {

using Clock = std::chrono::steady_clock;
using k3sys::seconds_since;

}  // namespace

bool power_recoverable(Fault f) {
  return f == Fault::kUnreachable || f == Fault::kUnresponsive || f == Fault::kRepeatedTimeouts;
}

std::string utc_day_start() {
  const std::time_t now = std::time(nullptr);
  return k3store::utc_us_at(now - now % (24 * 3600));  // POSIX days are 86400 s: UTC midnight
}

void Farm::board_event(const std::string& board, k3store::BoardEvent event, Fault fault,
                       const std::string& reason) {
  if (db_ == nullptr) return;
  db_->write([row = k3store::BoardEventRow{config_.name, board, k3store::now_utc_us(), event,
                                           fault == Fault::kNone ? "" : to_string(fault), reason,
                                           run_uuid_, this_actor()}](auto& c) {
    insert_board_event(c, row);
  });
}

bool Farm::power_recover(const std::string& board, const std::function<bool()>& keep_waiting,
                         const std::function<void(const std::string&)>& note) {
  State& s = state(board);
  const BoardConfig& cfg = s.board->config();
  if (!cfg.pdu || db_ == nullptr || cfg.power_attempts_per_day == 0) return false;
  Fault fault = Fault::kNone;
  std::string was;
  {
    std::lock_guard lock(mu_);
    if (s.quarantine) {
      fault = s.quarantine->fault;
      was = s.quarantine->reason;
    } else if (s.standing) {
      fault = fault_from_string(s.standing->fault);
      was = s.standing->reason;
    }
  }
  if (!power_recoverable(fault)) return false;
  const int allowed = cfg.power_attempts_per_day;
  for (;;) {
    const int used = db_->query([&](auto& c) {
      return k3store::power_requests_since(c, config_.name, board, utc_day_start());
    });
    if (used >= allowed) {
      give_up_power(board, fault, used);
      return false;
    }
    const std::string refused = request_pdu_reboot(*cfg.pdu);
    const std::string step =
        refused.empty()
            ? fmt::format("power cycle {} of {} today: {} (was: {})", used + 1, allowed,
                          pdu_reboot_url(*cfg.pdu), was)
            : fmt::format("power cycle {} of {} today refused: {}", used + 1, allowed, refused);
    board_event(board, k3store::BoardEvent::kPowerRequested, fault, step);
    if (note) note(fmt::format("board {}: {}", board, step));
    if (refused.empty() && bring_back_after_power(board, keep_waiting, note)) return true;
    if (used + 1 >= allowed) {
      give_up_power(board, fault, used + 1);
      return false;
    }
    if (keep_waiting && !keep_waiting()) return false;  // the next run's start tries again
  }
}

bool Farm::bring_back_after_power(const std::string& board,
                                  const std::function<bool()>& keep_waiting,
                                  const std::function<void(const std::string&)>& note) {
  State& s = state(board);
  const BoardConfig& cfg = s.board->config();
  const PduOutlet& pdu = *cfg.pdu;
  const auto say = [&](k3store::BoardEvent e, const std::string& line) {
    board_event(board, e, Fault::kNone, line);
    if (note) note(fmt::format("board {}: {}: {}", board, k3store::to_string(e), line));
  };
  const auto switched = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(pdu.delay_s));
  say(k3store::BoardEvent::kPowerDone, fmt::format("outlet {} of PDU {} off for {:g} s, then on",
                                                   pdu.outlet, pdu.name, pdu.delay_s));
  // The shared connection (if any) died with the board: the next command opens a fresh one.
  s.board->transport().close();
  bool answered = false;
  for (;;) {
    answered = s.board->exec({"true"}, config_.connect_timeout_s + 5).ok();
    if (answered || seconds_since(switched) >= pdu.delay_s + pdu.ssh_wait_s ||
        (keep_waiting && !keep_waiting()))
      break;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  if (!answered) {
    say(k3store::BoardEvent::kNotBack,
        fmt::format("SSH did not answer within {:g} s (pdu.ssh_wait_s)", pdu.ssh_wait_s));
    return false;
  }
  say(k3store::BoardEvent::kCameBack,
      fmt::format("SSH answers {:.1f} s after the request", seconds_since(switched)));
  {
    // The lease's board-side holder died with the board: its row goes; it is taken again later.
    std::lock_guard lock(mu_);
    s.lease.reset();
  }
  HealthSample h;
  try {
    s.board->deploy(s.board->local_runner(root_));
    h = s.board->probe();
  } catch (const BoardError& e) {
    h.ok = false;
    h.error = e.what();
  }
  std::string tcm;
  if (h.ok && !h.tcm_stale_blocks.empty()) {
    const std::string blocks = nlohmann::json(h.tcm_stale_blocks).dump();
    if (cfg.recover_tcm_locks) {
      // Only blocks whose owner is dead: no --force (cmd_tcm.cpp's release without it).
      const RunResult r =
          s.board->run_runner({"--tcm-force-release", "all", "--json"}, cfg.timeout_s);
      tcm = r.ok() ? fmt::format("; stale TCM blocks {} released (recover_tcm_locks)", blocks)
                   : fmt::format("; stale TCM blocks {} not released: {}", blocks, r.reason);
      h = s.board->probe();
    } else {
      tcm = fmt::format(
          "; stale TCM blocks {} left (recover_tcm_locks = false: k3tune tcm release)", blocks);
    }
  }
  db_->write([run = run_uuid_, board, ok = h.ok, json = h.to_json().dump()](auto& c) {
    insert_probe(c, run, board, ok, json);
  });
  if (!h.ok) {
    say(k3store::BoardEvent::kUnhealthy, h.error);
    return false;
  }
  say(k3store::BoardEvent::kHealthy, "probe passed" + tcm);
  std::string was;
  {
    std::lock_guard lock(mu_);
    was = s.quarantine ? s.quarantine->reason : s.standing ? s.standing->reason : "";
    s.quarantine.reset();
    s.standing.reset();
    s.consecutive_timeouts = 0;
    s.prepared = false;  // leased and prepared again before it measures
    s.baseline.reset();
  }
  say(k3store::BoardEvent::kRecovered,
      fmt::format("power-cycled back into service (was: {})", was));
  return true;
}

void Farm::give_up_power(const std::string& board, Fault fault, int attempts) {
  State& s = state(board);
  const std::string reason = fmt::format(
      "board {}: given up after {} power cycles today (power_attempts_per_day = {}); `k3tune farm "
      "release --board {}` lets it back in",
      board, attempts, s.board->config().power_attempts_per_day, board);
  const std::string today = utc_day_start();
  const auto states = db_->query([&](auto& c) { return board_states(c, config_.name); });
  const auto it = states.find(board);
  if (it == states.end() || it->second.event != k3store::BoardEvent::kGivenUp ||
      it->second.at < today)
    board_event(board, k3store::BoardEvent::kGivenUp, fault, reason);
  std::lock_guard lock(mu_);
  s.quarantine = QuarantineEntry{fault, reason};
}

}  // namespace k3farm
