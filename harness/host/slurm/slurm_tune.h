// `k3tune tune --farm` on a farm whose boards Slurm schedules: the tuning campaign as Slurm jobs.
//
//   1. The farm is checked against the cluster first (slurm_validate.h); bad input submits nothing.
//   2. A job array, one task per board that can take work, each tuning its share of the sessions
//      (`--shard i/n` of the campaign's session order: one session per op and shape) on the board
//      Slurm allocated, with the built-in campaign on that one board (tuner/campaign.h), into its
//      own database. Every task starts from a snapshot of the run's database, so a session an
//      earlier run finished is resumed, not tuned again, and a count in the measurement cache is
//      not counted again. A board fault drains the node (slurm_worker.h).
//   3. When the array has left the queue its databases are merged into the run's; sessions left
//      (their board drained or dead) go out again as `--sessions a,b`, up to max_attempts rounds.
//   4. Every session tuned on boards of one fingerprint: one more job, the table pass, runs the
//      whole campaign from a snapshot of the merged database on a board Slurm allocates. Every
//      session is finished there, so it measures nothing and writes the table (--out), exactly as
//      the built-in campaign's last pass does. Boards of two fingerprints in one run are refused
//      after the sessions (a table is per fingerprint; a `constraint` selects one kind).
//   5. A Slurm controller that stops answering for [farm] slurm_timeout_s is a fault: what the
//      jobs committed is merged and the jobs left are named; the same command with --resume waits
//      for them, merges them and goes on from there.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/slurm/slurm_client.h"
#include "harness/host/slurm/slurm_jobs.h"

namespace k3slurm {

struct SlurmTuneRequest {
  std::string farm_file, root, k3tune;
  std::string targets_file;  // --targets given to this k3tune ("" : none)
  std::string db_path;
  std::vector<std::string> boards, tags;  // --board / --tag as given
  // `tune`'s own arguments as given, without --reservation, --shard and --sessions.
  std::vector<std::string> tune_args;
  std::string reservation;  // --reservation: overrides the farm file's
  // --resume: continue the latest run of the same command, waiting for the jobs it left (a Slurm
  // controller went silent) and merging them before anything new is submitted.
  bool resume = false;
  int max_attempts = 3;  // rounds of session jobs at most
  double poll_s = 1;
};

struct SlurmSession {
  std::string label;
  bool tuned = false;       // else left (no job finished it)
  std::string board, task;  // where it was tuned
};

struct SlurmTuneOutcome {
  std::string farm_name, farm_source, job_dir;
  std::vector<std::string> job_options;
  std::vector<SlurmTask> tasks;                  // session tasks and the table pass
  std::map<std::string, std::string> drained;    // board -> reason k3tune gave Slurm
  std::map<std::size_t, SlurmSession> sessions;  // by position in the session order
  std::size_t total_sessions = 0;
  std::set<std::string> fingerprints;                    // of the boards that tuned, as JSON text
  std::string table_task;                                // the table pass's job ("" : not run)
  nlohmann::json table_pass = nlohmann::json::object();  // its outcome (`tune --farm --json`)
  int table_pass_measured = 0;  // what the table pass measured (0 when all was stored)
  std::string problem;          // why no table was written, when none was
  std::string fault;            // Slurm stopped answering: what and which jobs were left
  double wall_s = 0;
  int tuned() const;
  bool complete() const { return problem.empty() && fault.empty() && !table_task.empty(); }
};

SlurmTuneOutcome run_slurm_tune(const SlurmTuneRequest& rq, const SlurmClient& slurm);

}  // namespace k3slurm
