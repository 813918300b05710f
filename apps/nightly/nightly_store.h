// The nightly's rows in the results database (schema: harness/host/store/database.cpp, migration 5 ->
// 6): nightlies(nightly_id) one per nightly directory, nightly_steps(nightly_id, step) what each
// step did, so a re-run with --resume skips what is done.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/host/store/sqlite.h"

namespace k3nightly {

struct NightlyRow {
  std::string nightly_id, profile, dir, started_at, status;
  std::optional<int> exit_code;
  std::string host_build_hash, verdict_run_uuid;
  std::string host_revision;  // the host build's source revision ("" when not recorded)
};

struct StepRow {
  std::string status;  // running | done | failed
  std::string detail_json;
  int exit_code = -1;  // -1: not finished
};

void begin_nightly(k3store::Connection& c, const NightlyRow& row);  // insert, or mark running
void finish_nightly(k3store::Connection& c, const std::string& id, const std::string& status,
                    int exit_code, const std::string& host_hash, const std::string& verdict_run);
// The finished nightlies (ok or regression) other than `id` that recorded a host build, newest
// first, with their build's source revision (revision_ancestry.h chooses among them).
std::vector<NightlyRow> earlier_nightlies(k3store::Connection& c, const std::string& id);

// The detail of `step` in the latest finished nightly (ok or regression) other than `id` in which
// that step was done: what tonight's step is compared with (e.g. yesterday's instruction counts).
struct PreviousStep {
  std::string nightly_id;
  std::string detail_json;
};
std::optional<PreviousStep> previous_step(k3store::Connection& c, const std::string& id,
                                          const std::string& step);

// The artifacts directory of nightly `id` ("" when there is no such nightly).
std::string nightly_dir(k3store::Connection& c, const std::string& id);

std::optional<StepRow> find_step(k3store::Connection& c, const std::string& id,
                                 const std::string& step);
void begin_step(k3store::Connection& c, const std::string& id, const std::string& step, int seq,
                const std::string& command);
void finish_step(k3store::Connection& c, const std::string& id, const std::string& step, bool done,
                 int exit_code, double wall_s, const std::string& detail_json);

}  // namespace k3nightly
