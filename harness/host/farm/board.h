// One board of the farm: deploys the runner (once per build hash, SHA-256 verified on the board),
// runs it under a board-side timeout that kills the whole remote process group, and probes the
// board's health. Every word sent to the board is an argv element (transport.h).
//
// On the board, under work_dir:
//   runners/k3bench-<sha256>  the runner, content-addressed: a second deploy of one build is a
//                             hash check, never a copy
//   run-<pid>-<n>.pid         process group of a run in flight (removed when it ends)
//   lease.lock                flock held by the lease holder (lease.h)
//   test-hooks/               read only when the inventory sets test_hooks (tests):
//                             uptime_offset_s (added to the uptime: a reboot), extra_facts
//                             (lines appended to the probe's facts, e.g. a hot thermal zone)
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/host/farm/health.h"
#include "harness/host/farm/inventory.h"
#include "harness/host/farm/transport.h"
#include "harness/host/targets/process.h"

namespace k3farm {

// Why something failed: the board (it cannot be trusted with more work this run) or the cell.
enum class Fault {
  kNone,
  kCell,              // the runner ran and failed (bad case, accuracy, crash)
  kRunnerTimeout,     // the runner hung; killed on the board (a cell fault, unless it repeats)
  kUnreachable,       // ssh could not connect, or the connection died mid-run
  kHostKey,           // unknown or changed host key: refused, nothing ran
  kUnresponsive,      // no answer within the local deadline (board-side kill failed as well)
  kRebooted,          // the board rebooted (probe)
  kProbeFailed,       // the health probe or the deploy failed
  kRepeatedTimeouts,  // farm.max_timeouts runner timeouts in a row
};
const char* to_string(Fault f);
// The inverse of to_string (kProbeFailed for a name this k3tune does not know).
Fault fault_from_string(const std::string& name);
// Board faults quarantine the board; kCell and kRunnerTimeout do not (by themselves).
bool is_board_fault(Fault f);

struct BoardError : std::runtime_error {
  BoardError(Fault f, const std::string& what) : std::runtime_error(what), fault(f) {}
  Fault fault;
};

// A failure on the controller's side (no pipe or process could be made: out of descriptors or
// processes; the database; k3tune's own code): never a board's fault. It ends the run with this
// one line; no board is quarantined for it; what was committed stays.
struct ControllerFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct DeployResult {
  std::string remote_path;  // <work_dir>/runners/k3bench-<sha256>
  std::string sha256;       // of the local runner (the build hash)
  bool copied = false;      // false: the board already had exactly this binary
  std::string why;          // why it was copied: "absent", "sha256 mismatch (board had ...)"
};

// A run that differs from the board's usual one: another emulator command than its exec prefix
// (an instruction count: the board's qemu-user with the counting plugin), extra environment, or
// another runner installed on the board (a baseline measured next to the deployed runner).
struct RunOverride {
  std::optional<std::vector<std::string>> emulator;  // none: the exec prefix
  std::map<std::string, std::string> env;
  std::string runner;  // remote path from install(); empty: the deployed runner
};

struct RunResult {
  k3targets::ProcessResult process;  // of the local ssh client (or the local runner)
  Fault fault = Fault::kNone;
  std::string reason;  // one line; empty when ok
  bool ok() const { return fault == Fault::kNone; }
};

class Board {
 public:
  // `transports` makes the board's transport (empty: the inventory's, make_transport).
  Board(const FarmConfig& farm, BoardConfig config, const TransportFactory& transports = {});
  const BoardConfig& config() const { return config_; }
  const std::string& name() const { return config_.name; }
  const Transport& transport() const { return *transport_; }

  // The runner this board uses on this machine: config.runner, else the runner of the build
  // preset named by its variant (CMakePresets.json).
  std::string local_runner(const std::string& root) const;
  // Copies the runner unless the board already has it (checked with sha256sum on the board),
  // verifies the copy on the board, and moves it into place atomically. Throws BoardError.
  DeployResult deploy(const std::string& local_runner_path);
  // The same copy and check for another runner (a baseline), which does not become the deployed
  // one: run it with RunOverride::runner = the result's remote_path.
  DeployResult install(const std::string& local_runner_path) const;
  const std::optional<DeployResult>& deployed() const { return deployed_; }

  // K3BENCH_* and K3_* from our environment, then the board's own settings (which win).
  std::map<std::string, std::string> runner_env() const;
  // Runs the deployed runner with `args`: killed on the board after timeout_s (whole process group,
  // then SIGKILL 2 s later); the local side gives up later still and then kills the board-side
  // group itself. Never throws for a failed run: the result says which fault it was.
  RunResult run_runner(const std::vector<std::string>& args, double timeout_s,
                       const RunOverride* override = nullptr) const;
  // Runs a shell-free command on the board (argv), for probes and tests.
  k3targets::ProcessResult exec(const std::vector<std::string>& argv, double timeout_s) const;

  // Facts, then (with a deployed runner) vlenb and TCM status. A failed probe returns ok = false
  // with the reason; an unreachable board reads as such.
  HealthSample probe() const;
  // The fault behind a failed exec/run of this board (kNone when `r` is ok). Throws
  // ControllerFailure when this machine could not even start the command (pipe or fork failed).
  Fault classify(const k3targets::ProcessResult& r, std::string* reason) const;

 private:
  FarmConfig farm_;
  BoardConfig config_;
  std::unique_ptr<Transport> transport_;
  std::optional<DeployResult> deployed_;
};

// SHA-256 of a local file, lowercase hex. Throws std::runtime_error naming the file.
std::string sha256_file(const std::string& path);

}  // namespace k3farm
