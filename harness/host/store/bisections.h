// What `k3tune bisect` found, kept with the measurements it rests on: one row per bisection
// (range, cases, result) and one per probed commit and case (outcome, effect against the good
// runner with its interval, the run that measured it). Rows are written as the search goes, so an
// interrupted bisection keeps every probe it finished.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/host/store/sqlite.h"

namespace k3store {

struct BisectionRecord {
  std::string bisection_id, good_revision, bad_revision, metric, variant, place, cases_json;
  int commits = 0;
  std::string nightly_id;  // "" : not from a nightly
  // Read only (begin_bisection starts it 'running' now; finish_bisection ends it).
  std::string status = {};      // running | found | range | not-reproduced | failed
  std::string first_bad = {};   // status found
  std::string range_json = {};  // status range: the undecided commits; "[]" otherwise
  std::string started_at = {};
};

struct BisectionProbeRecord {
  std::string bisection_id;
  int seq = 0;
  std::string case_label, revision;
  int position = 0;
  std::string outcome;  // good | bad | skip
  std::string reason, build_hash, run_uuid, verdict;
  std::optional<double> effect, ci_low, ci_high, mde;
  std::optional<int> rounds, attempts;
};

// Inserts the bisection as 'running'.
void begin_bisection(Connection& c, const BisectionRecord& r);
void insert_bisection_probe(Connection& c, const BisectionProbeRecord& r);
// status: found (first_bad set), range (range: the undecided commits), not-reproduced or failed.
void finish_bisection(Connection& c, const std::string& bisection_id, const std::string& status,
                      const std::string& first_bad, const std::vector<std::string>& range,
                      double wall_s);
// A bisection with the number of commits it probed (and of those skipped).
struct BisectionSummary {
  BisectionRecord bisection;
  int probed = 0, skipped = 0;
};
// The bisections that chased a nightly's regression, oldest first.
std::vector<BisectionSummary> nightly_bisections(Connection& c);
// The probes of a bisection in probe order.
std::vector<BisectionProbeRecord> bisection_probes(Connection& c, const std::string& bisection_id);

}  // namespace k3store
