// Word from the nightly when a regression is confirmed: a hook command of the nightly's
// configuration (`k3tune nightly --config FILE`, a TOML file) run once the night has finished,
// given a JSON payload file and a Markdown summary written for a merge-request or issue comment.
//
//   notify = ["scripts/post-comment.sh", "--project", "k3"]   # the command and its arguments
//   notify_timeout_s = 60        # killed (with everything it started) after this long
//   report_base_url = "https://ci.example/k3/nightly"   # links: <base>/<night>/report.html
//   site_url = "https://ci.example/k3/site/"             # the published site (k3tune publish)
//
// The hook gets the payload's path and the summary's path as its last two arguments (after the
// configured ones); both files stay in <night>/notify/. Kinds of message ("kind" in the payload):
//   regression   the night regressed and the regression is confirmed: a timing regression of a
//                report whose verdict was measured interleaved (the nightly's verdict bench, a
//                board's verdict) or confirmed by the report's re-measurement, an accuracy flag,
//                or more instructions by the exact count rule; with the bisection's suspect
//                commit when the bisect step ran. A suspected regression that nothing confirmed
//                sends nothing.
//   board_fault  no confirmed regression, but boards were quarantined (or the deploy + probe
//                step found a faulty one): a quieter message naming the boards and why.
// A night with neither sends nothing. The hook's outcome (sent, failed with its exit code, timed
// out) is one line on the nightly's output and a "notify" row of nightly_steps with the detail;
// it never changes the night's exit code.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/store/sqlite.h"

namespace k3nightly {

struct NotifyConfig {
  std::vector<std::string> command;  // empty: no hook
  double timeout_s = 60;
  std::string report_base_url, site_url;
};
// The nightly configuration file; UserError naming the file, line and key on bad input.
NotifyConfig load_notify_config(const std::string& path);

// What the night did, as far as its message depends on it.
struct NightFacts {
  std::string id, dir, profile, farm, status, verdict;
  int exit_code = 0;
  nlohmann::json details = nlohmann::json::object();  // step -> detail (NightlyState::details)
  std::map<std::string, int> exit_codes;              // step -> exit code
  std::string previous_counts_nightly;
};

struct Notice {
  std::string kind;  // "regression" or "board_fault"
  nlohmann::json payload;
  std::string markdown;
};
// The night's message, or nothing to say.
std::optional<Notice> night_notice(const NightFacts& night, const NotifyConfig& config);

struct HookOutcome {
  std::string status;  // "sent", "failed" or "timed-out"
  int exit_code = -1;
  double wall_s = 0;
  std::string line;  // one line for the nightly's output
};
// Writes the payload and summary into <dir>/notify/ and runs the hook (its output to
// <dir>/logs/notify.log); never throws for what the hook does.
HookOutcome send_notice(const NotifyConfig& config, const Notice& notice, const std::string& dir);

// The whole of it after a night: the notice, the hook, one line printed and the "notify" step row
// (seq: after the profile's steps). A notice already sent by an earlier attempt of the same night
// (--resume) is not sent again. Never throws.
void notify_after_night(const NotifyConfig& config, const NightFacts& night,
                        k3store::Connection& db, int seq);

}  // namespace k3nightly
