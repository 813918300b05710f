// `k3tune nightly`: one resumable command for the nightly job. The profile's steps
// (nightly_profile.h) run in order, each a k3tune subcommand in a child process whose output goes
// to <dir>/logs/<step>.log; the database records each step (nightly_steps) and the nightly
// (nightlies). Re-running with --resume DIR skips the steps already done; a step cut short is
// run again, and the bench steps themselves resume (cells measured are skipped, committed
// processes adopted), so nothing measured is measured twice. A farm step cut short (killed) leaves
// its leases behind, stale (holder dead); resuming that step first recovers the farm's stale
// leases (`k3tune farm release --stale`, logged) -- the one place a stale lease is recovered
// without being asked, because the nightly being resumed is the dead holder.
//
// Artifacts in <dir> (default <root>/nightly/<UTC date and time, e.g. 2026-12-01T0300Z>):
// nightly.md (steps, verdict, where everything is), summary.md / report.html / report.json (the
// report of the verdict run, with the nightly's steps appended to summary.md), tables/ (tuning
// tables), logs/.
//
// Exit codes: 0 ok; 1 a step failed (rerun with --resume DIR); 2 bad input (nothing run);
// 3 finished, but cells failed or boards were quarantined; 4 regression against the previous
// nightly: the verdict run (both runners measured interleaved) or the instruction counts (more
// instructions than the previous nightly's counts of the same case, beyond twice the jitter).
// The exit code is the night's worst verdict.
#pragma once

#include <string>
#include <vector>

namespace k3nightly {

struct NightlyRequest {
  std::string profile = "quick";
  std::string dir;     // "" : <root>/nightly/<stamp>
  std::string resume;  // a nightly directory to continue
  std::string farm = "local";
  bool build = true;
  std::string root, db_path, targets_file;
  std::string self_exe;  // the k3tune binary the steps run
  // A farm scheduled by Slurm: the bench steps' jobs run in this reservation (bench --reservation).
  std::string reservation;
  // The site `k3tune publish` updates (incrementally) after the night's report: "" is the folder
  // beside the nightly's own (<dir>/../site); "none" publishes nothing.
  std::string site;
  // The nightly configuration file (TOML; notify.h): the hook run after a confirmed regression
  // or a board fault. "" : none.
  std::string notify_config;
};

struct NightlyOutcome {
  std::string id, dir;
  std::string site;  // the published site's folder ("" : not published, see publish_note)
  std::string publish_note;
  int exit_code = 0;
  std::string verdict;  // one line
  double wall_s = 0;
};

// Throws UserError on bad input (before anything runs or is written).
NightlyOutcome run_nightly(const NightlyRequest& request);

}  // namespace k3nightly
