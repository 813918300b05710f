#include "harness/host/farm/lease.h"

#include <unistd.h>

#include <fmt/format.h>

#include "harness/host/store/results.h"

namespace k3farm {

using k3targets::last_line;
namespace {

// $1 work dir. Holds flock on the lock file for as long as our stdin stays open; exit 75 when
// someone else holds it. The first line tells the controller the board-side holder's pid.
constexpr const char* kHoldScript = R"sh(mkdir -p -- "$1" || exit 1
exec 9>>"$1/lease.lock" || exit 1
flock -n -E 75 9 || exit 75
echo "k3farm-lease $$"
exec cat >/dev/null)sh";

// $1 work dir: exit 0 when the lock is free (taken and dropped at once), 75 when held.
constexpr const char* kTryScript = R"sh(mkdir -p -- "$1" || exit 1
exec 9>>"$1/lease.lock" || exit 1
flock -n -E 75 9 || exit 75
exit 0)sh";

// $1 pid of a leftover holder: killed only if it is still the `cat` our hold script became.
constexpr const char* kKillHolderScript =
    R"sh([ "$(cat /proc/"$1"/comm 2>/dev/null)" = cat ] || exit 0
kill -KILL "$1")sh";

std::string expand(std::string word, const BoardConfig& b) {
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"{board}", b.name},
                                   {"{host}", b.host.empty() ? "localhost" : b.host}}) {
    for (auto at = word.find(key); at != std::string::npos; at = word.find(key, at + value.size()))
      word.replace(at, key.size(), value);
  }
  return word;
}

}  // namespace

Lease::Lease(const FarmConfig& farm, const Board& board, k3store::DatabaseAccess& db,
             const std::string& run_uuid)
    : board_(board), db_(db) {
  row_.board = board.name();
  row_.farm = farm.name;
  row_.run_uuid = run_uuid;
  row_.holder_host = this_host();
  row_.holder_pid = getpid();
  row_.holder_start = process_start(getpid());
  row_.acquired_at = k3store::now_utc();
  // Committed before the board is asked: another controller sees the row from then on.
  if (const auto existing = db_.query([&](auto& c) { return insert_lease(c, row_); })) {
    const LeaseState st = judge_lease(*existing, &board);
    if (st.stale)
      throw LeaseError(fmt::format(
          "board {}: stale lease of {} pid {} since {} ({}); recover with `k3tune farm release "
          "--stale --board {}`",
          board.name(), existing->holder_host, existing->holder_pid, existing->acquired_at, st.why,
          board.name()));
    throw LeaseBusy(fmt::format("board {}: leased by {} pid {} since {} (run {})", board.name(),
                                existing->holder_host, existing->holder_pid, existing->acquired_at,
                                existing->run_uuid));
  }
  std::vector<std::string> lock;
  for (const auto& w : farm.lock_command) lock.push_back(expand(w, board.config()));
  try {
    holder_ = board.transport().hold(
        lock, {"sh", "-c", kHoldScript, "k3farm-lease", board.config().work_dir});
  } catch (const std::runtime_error& e) {  // pipe or fork failed here: not the board's doing
    drop_row();
    throw ControllerFailure(fmt::format("controller: cannot start the lease holder of board {}: {}",
                                        board.name(), e.what()));
  }
  const auto line = holder_->read_line(farm.lease_wait_s);
  if (!line || line->rfind("k3farm-lease ", 0) != 0) {
    holder_->stop(2);
    drop_row();
    const int st = holder_->exit_status();
    k3targets::ProcessResult r;
    r.exit_code = st;
    r.err = holder_->stderr_text();
    std::string why;
    const Fault f = board.classify(r, &why);
    if (f == Fault::kUnreachable || f == Fault::kHostKey) throw BoardError(f, why);
    if (st == 75)
      throw LeaseBusy(
          fmt::format("board {}: {}/lease.lock is held on the board (another controller)",
                      board.name(), board.config().work_dir));
    throw LeaseError(fmt::format("board {}: lease not granted ({}{})", board.name(),
                                 farm.lock_command.empty() ? "" : "lock command: ",
                                 line                       ? *line
                                 : st < 0                   ? "no answer"
                                 : last_line(r.err).empty() ? fmt::format("exit {}", st)
                                                            : last_line(r.err)));
  }
  row_.remote_pid = std::stoll(line->substr(13));
  db_.write([board = row_.board, pid = *row_.remote_pid](auto& c) {
    set_lease_remote_pid(c, board, pid);
  });
}

void Lease::drop_row() {
  db_.write([row = row_](auto& c) { delete_lease(c, row); });
}

Lease::~Lease() {
  try {
    release();
  } catch (...) {
  }
}

bool Lease::holding() {
  return holder_ && holder_->running();
}

void Lease::release() {
  if (!holder_) return;
  holder_->stop(10);
  holder_.reset();
  drop_row();
}

std::optional<bool> board_lock_held(const Board& board) {
  const auto r =
      board.exec({"sh", "-c", kTryScript, "k3farm-lease-try", board.config().work_dir}, 30);
  if (r.ok()) return false;
  if (r.exit_code == 75) return true;
  return std::nullopt;
}

LeaseState judge_lease(const k3store::LeaseRow& row, const Board* board) {
  LeaseState st{row, false, ""};
  const auto alive = holder_alive(row);
  if (alive && !*alive) {
    st.stale = true;
    st.why = fmt::format("holder pid {} on {} is gone", row.holder_pid, row.holder_host);
    return st;
  }
  if (!alive && board != nullptr && board_lock_held(*board) == std::optional<bool>(false)) {
    st.stale = true;
    st.why = "the board's lease lock is free";
  }
  return st;
}

std::string recover_stale_lease(k3store::Connection& db, const k3store::LeaseRow& row,
                                const Board* board) {
  const LeaseState st = judge_lease(row, board);
  if (!st.stale)
    throw LeaseError(
        fmt::format("board {}: lease of {} pid {} is live; only its holder releases it", row.board,
                    row.holder_host, row.holder_pid));
  std::string done =
      fmt::format("board {}: stale lease of {} pid {} since {} ({}) removed", row.board,
                  row.holder_host, row.holder_pid, row.acquired_at, st.why);
  if (board != nullptr && row.remote_pid && board_lock_held(*board) == std::optional<bool>(true)) {
    board->exec(
        {"sh", "-c", kKillHolderScript, "k3farm-lease-kill", std::to_string(*row.remote_pid)}, 30);
    done += fmt::format("; leftover board-side holder pid {} killed", *row.remote_pid);
  }
  delete_lease(db, row);
  return done;
}

}  // namespace k3farm
