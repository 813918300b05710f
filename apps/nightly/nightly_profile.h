// The nightly's profiles: which steps run, each a typed request for a k3tune child
// (harness/host/launch).
//
// quick (pinned; the README's main command): the built-in local farm (host + qemu-user boards at
//   VLEN 256 and 1024), variants host, rvv and ime2-emu; two Qwen3-0.6B Linear decode shapes
//   (k/v_proj 1024x1024, gate/up_proj 3072x1024) on every board (one bench step per board, so
//   each board measures the whole set every night), 2 processes x 3 repetitions; the
//   IME2 prefill kernel (emulated) at one 0.6B shape under qemu at VLEN 1024; tuning with a budget
//   of 8 measurements: time on the host, instruction counts under qemu (exact proxy); the host
//   table verified against the defaults; the verdict on the host, interleaved with the previous
//   nightly's kept runner; instruction counts (`k3tune count`) of Linear decode and prefill and
//   attention decode and prefill at 0.6B shapes, VLEN 256 and 1024, RVV and IME2-emulation
//   runners, each judged against the previous nightly's counts by the exact rule (a change
//   beyond twice the measured per-process jitter is a change; within it "identical").
// full: every op and shape of Qwen3-0.6B spread over the farm's boards (one bench step, cells to
//   whichever board is free) with adaptive process counts (target CI 3%), larger tuning budgets;
//   same verdict; counts of every Linear shape of the model besides.
//   A regression the verdict confirms is bisected over the commits since the previous night
//   (`k3tune bisect --from-nightly`: a runner built and measured per probed commit).
// smoke: the quick profile's host steps only (tuning and verdicts at 256x256, budget 4), and one
// small count (Linear
//   decode 128x64, VLEN 256, the RVV test tree's runner: the one a test run has built), for the
//   end-to-end test.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/launch/k3tune_request.h"

namespace k3nightly {

// What a step's command line may depend on: the run's directory and the results of the steps
// before it.
struct NightlyState {
  std::string dir;              // artifacts directory
  std::string farm;             // farm spec for the farm steps
  std::string host_hash;        // SHA-256 of today's host runner (verdict)
  std::string baseline_runner;  // kept runner of the previous nightly ("" : none usable)
  std::string baseline_note;    // why there is no A/B, or which nightly is the baseline
  nlohmann::json details = nlohmann::json::object();  // step -> its detail (run ids, ...)
  std::map<std::string, int> exit_codes;              // step -> its exit code (steps run or done)
  // The previous nightly's instruction counts: its "count" step's detail ("counts": rows with
  // path, case, figure, jitter and run_uuid) and its id; null when no earlier nightly counted.
  nlohmann::json previous_counts;
  std::string previous_counts_nightly;
  // Per-board verdicts on a farm file: the previous nightly's detail of each "verdict-<board>"
  // step ({"nightly": id, "detail": {...}}), and where tonight's board runners are kept.
  std::map<std::string, nlohmann::json> previous_steps;
  std::string runners_dir;                          // kept runners (k3reports::keep_runner)
  std::map<std::string, std::string> board_runner;  // board -> its runner on this machine
  std::string reservation;  // Slurm reservation of the bench steps ("" : the farm file's, if any)
  // The previous nightly whose tables tonight's are diffed against (its id and directory).
  std::string previous_tables_nightly, previous_tables_dir;
};

// The tables of a `tune --farm` step's detail whose objective was time (those `table verify` can
// check by timing), in group order.
std::vector<std::string> timed_tables(const nlohmann::json& tune_detail);

// The kept runner of the previous nightly's verdict on `board` to measure tonight's against, or
// why there is none (then `why` is set and the path is empty).
struct BoardBaseline {
  std::string runner, nightly, why;
};
BoardBaseline board_baseline(const NightlyState& s, const std::string& board);

// The run of tonight's (or the previous nightly's) `count` step that counted `path` ("" : none).
std::string count_run(const nlohmann::json& count_detail, const std::string& path);

struct NightlyStep {
  std::string name;
  // The step's k3tune child, from the state the steps before it left.
  std::function<k3launch::Request(const NightlyState&)> request;
  std::set<int> ok_codes{0};  // exit codes that finish the step (others fail the nightly)
  bool verdict = false;       // the report step: its exit code is the verdict
  bool leases = false;        // the step leases farm boards (see nightly.h: stale leases)
  std::map<std::string, std::string> env{};  // set for the step's process (and its runners)
  // Why the step does not run tonight ("" : it runs), e.g. nothing to compare with.
  std::function<std::string(const NightlyState&)> skip{};

  // Its child's arguments after k3tune's globals.
  k3launch::Args args(const NightlyState& s) const { return k3launch::arguments(request(s)); }
};

// The farm a nightly runs on, as far as its plan depends on it.
struct NightlyFarm {
  bool builtin =
      true;  // the built-in local farm (host + qemu boards), whose boards the profiles name
  std::vector<std::string> variants{};  // runner variants its boards deploy (built by the nightly)
  std::vector<std::string> boards{};    // its boards, in inventory order
  std::map<std::string, std::string> board_runner{};  // board -> its runner on this machine
  // Its scheduler touches boards only inside its jobs (each job deploys and probes the board it
  // is given, and takes it out when it is faulty): the nightly has no deploy step of its own.
  bool boards_only_in_jobs = false;
  std::string scheduler = "built-in";  // its title, for the step notes
};

// Throws UserError for an unknown profile. `build`: include the build steps. On the built-in farm
// the profile names the boards (one bench step per board: each measures every cell); on any other
// farm one bench step shares the cells among all its boards, and the build steps add the
// variants its boards deploy.
std::vector<NightlyStep> nightly_steps(const std::string& profile, bool build,
                                       const NightlyFarm& farm = {});

}  // namespace k3nightly
