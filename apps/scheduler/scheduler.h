// A farm's scheduler: who hands its boards to k3tune's work. Commands and the nightly ask the
// farm for its scheduler (scheduler_for) and give it their work; none of them asks which one it is.
//
//   builtin (builtin_scheduler.h) -- k3tune leases the boards itself (harness/host/farm/lease.h):
//     one controller and a few boards; the work runs in this process, one thread per board.
//   slurm (slurm_scheduler.h) -- a lab's Slurm: the boards are Slurm nodes, the work goes out as
//     requeueable jobs that run this k3tune on the node Slurm allocated (harness/host/slurm/), and
//     their databases are merged into the run's.
//
// What a third scheduler implements is this interface and one line of scheduler_for;
// docs/farm-and-nightly.md ("Adding a scheduler") says what each call must guarantee, and the
// conformance cases in tests/harness/scheduler_conformance_test.cpp run against every one.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/farm/inventory.h"
#include "harness/host/farmbench/farm_sweep.h"
#include "harness/host/farmbench/leased_board.h"
#include "tuner/tune_command.h"

namespace k3scheduler {

// This process's own executable (/proc/self/exe; "k3tune" when unknown).
std::string this_executable();

// The k3tune process that asks: a job of a scheduler runs this k3tune's subcommand again, with
// the same source root, targets file and database.
struct Caller {
  std::string root{}, db_path{}, targets_file{};
  std::vector<std::string> argv{};             // the command line as given (after the program name)
  bool json = false;                           // the caller prints --json
  bool quiet = false;                          // -q
  std::string executable = this_executable();  // the k3tune a job runs
  void note(const std::string& line) const;    // a progress line on stderr (unless quiet or json)
};

// How a piece of farm work ended, as the command's exit code says it.
enum class WorkStatus {
  kOk,           // everything asked for was done
  kCellsFailed,  // cells or sessions failed or were left (what was done is kept)
  kProblems,     // the scheduler or this controller failed (what was committed is kept)
};

// What a scheduler did with a command's work: printed by the command as the scheduler words it.
// Every outcome's JSON holds the common core its work kind documents (docs/farm-and-nightly.md,
// "Adding a scheduler"): for cells total_cells, measured_cells, failed_cells, unmeasured_cells,
// samples_before, samples_after, wall_s; for sessions total_sessions and groups[].table.
class WorkOutcome {
 public:
  virtual ~WorkOutcome() = default;
  // The outcome as JSON (null: there is none, nothing was done) and for a person.
  virtual nlohmann::json to_json() const = 0;
  virtual void print_text() const = 0;
  // On stdout: JSON (`json`) or text; nothing when there is no outcome.
  void print(bool json) const;
  // Lines for stderr after the outcome ("k3tune: " is put in front).
  virtual std::vector<std::string> problems() const { return {}; }
  virtual WorkStatus status() const = 0;
};

// A whole command run as one job on one board (the A/B bench on a board, table verify on the
// board that made the table): its output and exit status are the command's.
struct OneJob {
  std::string subcommand;  // "bench", "table verify"
  // The job's arguments: this command's own as given (Caller::argv after the subcommand's last
  // word), without the options `drop` (with their values), then `extra`.
  std::vector<std::string> drop, extra;
  std::vector<std::string> boards;  // the boards it may get
  std::string reservation;          // "" : the farm file's
};
struct JobResult {
  std::string job;             // the scheduler's name of the job and where it may run, for a person
  std::string output, errors;  // the command's stdout and stderr
  int exit_code = 1;           // the command's (1 when it did not end on its own)
  std::string fault;           // the scheduler stopped answering ("" : it ended)
};

// `tune --farm`: a tuning campaign's sessions over the boards chosen.
struct SessionsRequest {
  k3tuner::TuneCommand command;
  std::string farm_file;
  std::vector<std::string> boards, tags;  // --board / --tag as given
  std::string reservation;                // --reservation
  std::string shard, sessions;            // a job's share of the sessions (set by a controller)
  bool resume = false;                    // wait for the jobs an interrupted campaign left
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  // "builtin", "slurm": how outputs name the scheduler (k3farm::to_string of its kind).
  virtual std::string name() const = 0;
  // "built-in", "Slurm": how sentences for people name it ("Slurm farm: ...").
  virtual std::string title() const = 0;

  // ---- Boards
  // The boards a command may measure on in this process, of those chosen: inside one of the
  // scheduler's jobs, only the board the job holds.
  virtual std::vector<std::string> boards_for_this_process(
      std::vector<std::string> chosen) const = 0;
  // One board of `chosen` leased for a command that measures on one board (MeasuringPlace).
  virtual std::unique_ptr<k3farmbench::LeasedBoard> lease_board(
      std::vector<std::string> chosen, std::function<void(const std::string&)> note,
      double lease_wait_s) const = 0;
  // Whether boards are touched only inside the scheduler's jobs (the nightly then has no deploy
  // step of its own: each job deploys and probes its board).
  virtual bool boards_only_in_jobs() const = 0;
  // A --reservation given with this farm: k3bench::UserError (one line) when the scheduler has no
  // reservations.
  virtual void accept_reservation(const std::string& reservation) const = 0;
  // `farm list`: the scheduler's own view of each board (state, why it is held out, who uses it);
  // empty when it has none beyond k3tune's leases and quarantines.
  virtual std::map<std::string, nlohmann::json> board_views(
      const std::vector<std::string>& boards) const = 0;
  // Whether the scheduler holds the board out for a fault k3tune reported (a drain), as `view`
  // (from board_views) shows it; bring_back puts it back in service (`farm release --board`) and
  // says what it did, or throws std::runtime_error with the scheduler's reason.
  virtual bool holds_out(const nlohmann::json& view) const = 0;
  virtual std::string bring_back(const std::string& board, const nlohmann::json& view) const = 0;
  // k3tune took `board` out for a fault in this process: the scheduler keeps it out too.
  virtual void board_faulty(const std::string& board, const std::string& fault,
                            const std::string& reason) const = 0;

  // ---- Work
  // `bench --farm`: the cells of `rq` measured over its boards.
  virtual std::unique_ptr<WorkOutcome> run_cells(const k3farmbench::FarmBenchRequest& rq,
                                                 const std::string& reservation) = 0;
  // `tune --farm`: the campaign's sessions tuned over the boards, its tables written.
  virtual std::unique_ptr<WorkOutcome> run_sessions(const SessionsRequest& rq) = 0;
  // The whole command as one job on one of `job.boards` when the scheduler runs work only in its
  // jobs; nullopt: the command runs here, in this process (after accept_reservation).
  virtual std::optional<JobResult> run_as_one_job(const OneJob& job) = 0;
};

// The scheduler of `farm`, for `caller`.
std::unique_ptr<Scheduler> scheduler_for(const k3farm::FarmConfig& farm, Caller caller);

// The farm file (or "local"), loaded, and its scheduler; k3bench::UserError (one line, nothing
// written) for a bad farm file.
struct FarmAndScheduler {
  k3farm::FarmConfig farm;
  std::unique_ptr<Scheduler> scheduler;
};
FarmAndScheduler open_farm(const std::string& farm_file, const Caller& caller);

// The boards of `farm` that --board/--tag choose (all when neither), in inventory order;
// k3bench::UserError for an unknown board or tag.
std::vector<std::string> choose_boards(const k3farm::FarmConfig& farm,
                                       const std::vector<std::string>& boards,
                                       const std::vector<std::string>& tags);

}  // namespace k3scheduler
