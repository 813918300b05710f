// A tuning campaign on a farm (`k3tune tune --farm F [--tag T | --board B ...]`): every job of
// the command (op x shape: a model's shapes, or --op/--shape) is a tuning session, handed out to
// the boards. Boards are grouped by their probed fingerprint (and emulator command): each group
// tunes every session itself and gets its own table. Within a group each free board takes the
// next session; a board lost mid-session (k3targets::TargetLost) leaves the run and its session
// goes back to the queue, where another board of the group resumes it from the stored points (a
// session's identity holds the fingerprint, not the board's name), so with the same seed the
// table equals an uninterrupted campaign's. When every session of a group is done, one more pass
// over all of them on a board of the group (every session finished: nothing measured) writes the
// group's table, exactly as `tune` on one target does.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "harness/host/farm/inventory.h"
#include "harness/host/farmbench/shard.h"
#include "tuner/tune_command.h"

namespace k3tuner {

struct CampaignRequest {
  k3farm::FarmConfig farm;
  std::vector<std::string> boards;  // candidates (k3farm::select_boards), in inventory order
  TuneCommand command;  // command.out: the table (a group past the first: -<board> added)
  std::function<void(const std::string& line)> note;  // progress lines (thread-safe calls)
  // A share of the sessions (positions in the campaign's session order, the plan's jobs one per op
  // and shape): what a Slurm task of a campaign tunes (slurm_tune.h). The default is all of them.
  k3farmbench::Shard sessions;
  // false: tune the sessions only; the tables are a later pass's (a Slurm campaign's last job).
  bool write_tables = true;
};

struct CampaignGroup {
  std::string fingerprint;                     // the boards' fingerprint, as JSON text
  std::vector<std::string> boards;             // boards of this fingerprint that took part
  std::map<std::string, int> sessions_by;      // board -> sessions it finished
  std::map<std::string, std::string> lost;     // board -> why it left the campaign
  std::vector<std::string> unfinished;         // sessions (op shape) no board could finish
  std::vector<std::string> session_labels;     // every session of the campaign, in session order
  std::map<std::size_t, std::string> done_by;  // session position -> the board that finished it
  TuneOutcome outcome;                         // the final pass: every job, the table
};

struct CampaignOutcome {
  std::vector<CampaignGroup> groups;
  std::map<std::string, std::string> not_used;  // board -> why it took no part (lease, probe)
  // board -> (fault, reason) of every board the campaign quarantined (a Slurm task drains it)
  std::map<std::string, std::pair<std::string, std::string>> quarantined;
  double wall_s = 0;
  bool complete() const;  // every group tuned every session and wrote its table
};

// UserError for bad input (nothing measured): no board could be taken, bad spaces or shapes.
CampaignOutcome run_campaign(const std::string& root, const CampaignRequest& request);

}  // namespace k3tuner
