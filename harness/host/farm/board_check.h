// A board's first-night check (`k3tune doctor --farm`): everything a night needs from one board,
// one row per check with the fix when it fails. It deploys the runner as every run does (the
// runner is content-addressed on the board) and otherwise only reads: no lease, no probe row, no
// quarantine -- nothing reaches the results database. A dead board costs the inventory's connect
// timeout and no more: every later check is skipped.
//
// Checks, in order: reachable, host-key, runner (deploys and runs), marchid and vlenb (an A100's
// and 128 on a board tagged k3), tcm, ai-thread (/proc/set_ai_thread), pin (CPUs take an
// affinity), cpufreq, thermal, disk (free space in work_dir), perf (counter policy), and pdu (the
// board's pdudaemon answers; asked even when the board does not, nothing switched).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/farm/inventory.h"
#include "harness/host/farm/transport.h"

namespace k3farm {

// kFail: a check a night needs failed; kWarn: an advisory one did (the night runs, less well);
// kInfo: a fact shown for the record; kSkip: not checked (the board was not reached...).
enum class CheckStatus { kOk, kFail, kWarn, kInfo, kSkip };
const char* to_string(CheckStatus s);  // "ok", "FAIL", "warn", "info", "skip"

struct CheckRow {
  std::string board;
  std::string check;  // "reachable", "host-key", "runner", ...
  CheckStatus status = CheckStatus::kSkip;
  bool required = false;  // a failure means the board cannot run a night
  std::string detail;     // what was found
  std::string fix;        // what to do (empty when nothing is to be done)
  nlohmann::json to_json() const;
};

struct BoardCheckOptions {
  std::string root;               // source root: where the local runner of each variant is
  long long min_free_mib = 1024;  // free space a night needs in work_dir
};

// The A100's marchid (/proc/cpuinfo) and its vlenb (VLEN 1024), what a board tagged "k3" shows.
inline constexpr const char* kA100Marchid = "0x8000000041000002";
inline constexpr int kA100Vlenb = 128;
inline constexpr const char* kK3Tag = "k3";

// Every check of one board, in the order above. Throws ControllerFailure (board.h) only when this
// machine cannot start a command.
std::vector<CheckRow> check_board(const FarmConfig& farm, const BoardConfig& board,
                                  const BoardCheckOptions& options,
                                  const TransportFactory& transports = {});

// True when no required check of `rows` failed.
bool night_ready(const std::vector<CheckRow>& rows);

}  // namespace k3farm
