// Slurm's command-line clients (sinfo, scontrol, sbatch, squeue, scancel), run as child processes
// with a timeout: the only way k3tune talks to Slurm, so it works with whatever Slurm the lab runs
// (the clients find the cluster through $SLURM_CONF or /etc/slurm/slurm.conf).
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace k3slurm {

// The client is not on PATH: bad input for a farm with scheduler = "slurm".
struct SlurmMissing : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The client ran and failed (non-zero exit): what() is its last stderr line.
struct SlurmRefused : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The client timed out or could not reach slurmctld: a fault of the cluster, not of the input.
struct SlurmUnreachable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A node as sinfo and squeue show it.
struct NodeView {
  std::string node, state, reason, reason_user, reason_at;
  std::vector<std::string> jobs;  // "<job id> <user>" of each job running on it
};

class SlurmClient {
 public:
  explicit SlurmClient(double timeout_s = 20) : timeout_s_(timeout_s) {}

  // Runs `tool args...`; returns stdout. Throws SlurmMissing, SlurmRefused or SlurmUnreachable.
  std::string run(const std::string& tool, const std::vector<std::string>& args) const;

  // Node names of a partition (scontrol show partition, hostlist expanded).
  std::vector<std::string> partition_nodes(const std::string& partition) const;
  // Node names of a reservation (throws SlurmRefused when it does not exist).
  std::vector<std::string> reservation_nodes(const std::string& reservation) const;
  std::vector<std::string> expand_hostlist(const std::string& list) const;
  // sbatch --test-only with these options: throws SlurmRefused with Slurm's reason.
  void test_submit(const std::vector<std::string>& options) const;
  // sbatch --parsable with these options and the batch script at `script_path`: the job id.
  std::string submit(const std::vector<std::string>& options, const std::string& script_path) const;
  // "<job id>_<task>" -> state (PENDING, RUNNING, ...) of the jobs of `job_ids` still known to
  // squeue; a job that has left the queue is absent.
  std::map<std::string, std::string> queued(const std::vector<std::string>& job_ids) const;
  void drain(const std::string& node, const std::string& reason) const;
  // scancel of these jobs or array tasks ("<job>_<task>").
  void cancel(const std::vector<std::string>& ids) const;
  void resume(const std::string& node) const;
  // sinfo + squeue for these nodes (all known nodes when empty).
  std::map<std::string, NodeView> nodes(const std::vector<std::string>& names) const;

 private:
  double timeout_s_;
};

// One line, quotes and newlines removed, for a drain reason.
std::string reason_text(const std::string& text);

}  // namespace k3slurm
