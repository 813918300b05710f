// The Slurm side every farm command shares ([farm] scheduler = "slurm"): a job array of k3tune
// workers, each running one k3tune subcommand (bench, tune) on the board Slurm allocated into its
// own database, and the controller that submits the arrays, waits for them and merges what they
// wrote. The command decides what a task's share is (bench: cells, tune: sessions) and what its
// outcome JSON means; this file knows neither.
//
//   - The job directory is <db>.slurm/<hash of the command>/<run>; `--resume` continues the latest
//     run of the same command (named in <db>.slurm/<hash>/latest), whose jobs.json lists every
//     task submitted.
//   - Task i of an array runs `k3tune --json -q <subcommand> <args> <share i> <tail>` (the share
//     and tail from harness/host/launch/task_share.h) with
//     K3TUNE_SLURM_WORKER=1 and --db <dir>/job-<array>_<i>.db (the launcher's globals,
//     harness/host/launch; the database's name is expanded by the batch script's shell); its stdout
//     (the outcome) goes to job-<array>_<i>.json, its stderr to job-<array>_<i>.err, its exit
//     status to job-<array>_<i>.rc. A requeued task finds its own database and continues it.
//   - A Slurm controller that stops answering for `silence_s` is a fault: wait() says so and the
//     caller names the tasks still queued.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/bench/child_output.h"
#include "harness/host/launch/task_share.h"
#include "harness/host/slurm/slurm_client.h"

namespace k3slurm {

// A first round splits the work into this many `--shard i/n` tasks per board that can take work,
// so the array balances itself: Slurm starts the next task on whichever board is free, and a slow
// board takes fewer shares. The size of the work is known only to the tasks (the grid is expanded,
// the sessions planned, on the board a job holds); shares found empty are cancelled unstarted.
constexpr std::size_t kTasksPerBoard = 4;

// Where a task of an array stands.
enum class TaskState {
  kQueued,    // submitted, not seen to end yet
  kFinished,  // it left an outcome
  kFailed,    // it ended without an outcome (see its error)
  kLeft,      // still queued when the controller stopped waiting (Slurm went silent)
  kEmpty,     // cancelled unstarted: its share held nothing
};
// "queued", "finished", "failed", "left", "empty": the outcome JSON's "state".
const char* to_string(TaskState state);

struct SlurmTask {
  std::string id;     // "<array job id>_<task>"
  std::string share;  // its part of the work as worker arguments: "--shard 1/2", "--cells 0,3"
  int round = 1;
  std::string board;  // where it ran (from its outcome; "" when unknown)
  TaskState state = TaskState::kQueued;
  std::string error;  // the job's last stderr line when it left no outcome
  int measured = 0;   // cells or sessions it finished
};

struct SlurmJobsConfig {
  std::string root, k3tune;       // the source root and the k3tune the jobs run
  std::string targets_file;       // --targets given to this k3tune ("" : none)
  std::string db_path;            // the run's database, where the tasks' databases are merged
  std::string subcommand;         // "bench", "tune"
  std::vector<std::string> args;  // the subcommand's arguments every task gets
  bool resume = false;  // a task resumes what its requeued self measured (k3launch::task_tail)
  std::vector<std::string> job_options;  // the farm's sbatch options (slurm_validate.h)
  std::string job_name;                  // sbatch --job-name
  // The key of a task's outcome that gives the size of the whole work ("total_cells",
  // "total_sessions"; "" : none). Once a task reports it, the pending tasks of a `--shard i/n`
  // array whose share is empty (i above it) are cancelled (state "empty").
  std::string total_key;
  // The form of a task's outcome (k3bench::ChildOutput: its schema in configs/schema/ under
  // `root`); an outcome that does not follow it counts as the task failing, with the first field
  // that departs named (kNone: the outcome is not read).
  k3bench::ChildOutput form = k3bench::ChildOutput::kNone;
  // k3tune's global --json and -q in every task: the outcome is JSON for the controller to read;
  // a command run as one job for its own output (slurm_command.h) keeps the caller's choice.
  bool json = true, quiet = true;
  double poll_s = 1;      // squeue polling interval
  double silence_s = 60;  // [farm] slurm_timeout_s
};

// The job directory of a command (identity: the farm file and the subcommand's arguments); with
// `resume`, the latest run of the same command when there is one.
std::filesystem::path job_directory(const std::string& db_path,
                                    const std::vector<std::string>& identity, bool resume);

// The subcommand's arguments as typed (after `subcommand` in this process's argv), without the
// ones the controller sets per job: the flags `drop_flags` and the options `drop_options` with
// their values (also in their --opt=V form).
std::vector<std::string> subcommand_arguments(const std::vector<std::string>& argv,
                                              const std::string& subcommand,
                                              const std::vector<std::string>& drop_flags,
                                              const std::vector<std::string>& drop_options);

class SlurmJobs {
 public:
  SlurmJobs(SlurmJobsConfig config, const SlurmClient& slurm, std::filesystem::path dir);

  // Submits one array, a task per entry of `shares`. `seed_db` (optional): a database each task
  // starts from when it has none yet (a later pass that reads what earlier ones measured).
  // Throws SlurmUnreachable when Slurm did not take it.
  void submit(const std::vector<std::string>& shares, int round, const std::string& seed_db = "");
  // Waits until no task is queued, cancelling empty shares on the way (total_key). False when
  // Slurm stopped answering (fault() says how long).
  bool wait();
  // A task's outcome JSON, or nullopt with its state and error set (failed when `finished`,
  // else left).
  std::optional<nlohmann::json> outcome(SlurmTask& task, bool finished) const;
  // A task's stdout as it wrote it, and its exit status (nullopt: it did not end on its own).
  std::string output(const SlurmTask& task) const;
  std::string errors(const SlurmTask& task) const;  // its stderr
  std::optional<int> exit_status(const SlurmTask& task) const;
  // Merges every task's database into the run's (natural keys: merging twice adds nothing).
  void merge() const;
  // The tasks an earlier run of this command submitted (--resume), now this object's.
  void adopt_journal();

  std::vector<SlurmTask>& tasks() { return tasks_; }
  const std::vector<SlurmTask>& tasks() const { return tasks_; }
  const std::string& fault() const { return fault_; }
  const std::filesystem::path& dir() const { return dir_; }
  // "; jobs left: a, b (--resume waits for them ...)" or "; no job left running ...".
  std::string left_text() const;
  // When no task left an outcome: if they all refused the command with the same k3tune line (bad
  // input found on the board a job holds, e.g. an op the runner lacks), throws it once as
  // k3bench::UserError naming the job; else the fault, each task's last stderr line.
  std::string no_outcome_fault() const;

 private:
  std::string batch_script(const std::vector<std::string>& shares,
                           const std::string& seed_db) const;
  void save_journal() const;
  // With the work's size reported by a finished task: cancel the pending empty shares.
  void cancel_empty_shares(const std::map<std::string, std::string>& queued);

  SlurmJobsConfig config_;
  const SlurmClient& slurm_;
  std::filesystem::path dir_;
  std::vector<SlurmTask> tasks_;
  std::string fault_;
  std::optional<std::size_t> total_;  // the work's size, once a task reported it (total_key)
};

// The first round's shares: kTasksPerBoard `--shard i/n` per open board (at least one board).
std::vector<std::string> first_round_shares(std::size_t open_boards);
// A later round's: the positions `left` dealt round-robin over at most `tasks` tasks, each share
// "<option> a,b,..." (`--cells`, `--sessions`).
std::vector<std::string> split_shares(k3launch::ShareUnit unit,
                                      const std::vector<std::size_t>& left, std::size_t tasks);

// The chosen boards a job can get now: in the reservation (when there is one), and neither
// drained nor down.
std::vector<std::string> open_boards(const std::vector<std::string>& boards,
                                     const std::string& reservation, const SlurmClient& slurm);

}  // namespace k3slurm
