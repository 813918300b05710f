// The nightly's profiles: which steps run, with which k3tune command lines.
//
// quick (pinned; the README's main command): the built-in local farm (host + qemu-user boards at
//   VLEN 256 and 1024), variants host, rvv and ime2-emu; two Qwen3-0.6B Linear decode shapes
//   (k/v_proj 1024x1024, gate/up_proj 3072x1024) on every board (one bench step per board, so
//   each board measures the whole set every night), 2 processes x 3 repetitions; the
//   IME2 prefill kernel (emulated) at one 0.6B shape under qemu at VLEN 1024; tuning with a budget
//   of 8 measurements: time on the host, instruction counts under qemu (exact proxy); the host
//   table verified against the defaults; the verdict on the host, interleaved with the previous
//   nightly's kept runner.
// full: every op and shape of Qwen3-0.6B spread over the farm's boards (one bench step, cells to
//   whichever board is free) with adaptive process counts (target CI 3%), larger tuning budgets;
//   same verdict.
// smoke: the quick profile's host steps only (one shape, budget 4), for the end-to-end test.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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
};

struct NightlyStep {
  std::string name;
  std::function<std::vector<std::string>(const NightlyState&)> args;  // k3tune arguments
  std::set<int> ok_codes{0};  // exit codes that finish the step (others fail the nightly)
  bool json = false;          // the step prints JSON on stdout: kept as its detail
  bool verdict = false;       // the report step: its exit code is the verdict
  bool leases = false;        // the step leases farm boards (see nightly.h: stale leases)
  std::map<std::string, std::string> env{};  // set for the step's process (and its runners)
};

// The farm a nightly runs on, as far as its plan depends on it.
struct NightlyFarm {
  bool builtin = true;  // the built-in local farm (host + qemu boards), whose boards the profiles name
  std::vector<std::string> variants;  // runner variants its boards deploy (built by the nightly)
};

// Throws UserError for an unknown profile. `build`: include the build steps. On the built-in farm
// the profile names the boards (one bench step per board: each measures every cell); on any other
// farm one bench step shares the cells among all its boards, and the build steps add the
// variants its boards deploy.
std::vector<NightlyStep> nightly_steps(const std::string& profile, bool build,
                                       const NightlyFarm& farm = {});

}  // namespace k3nightly
