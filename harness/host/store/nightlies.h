// The nightly's rows in the results database (schema: database.cpp, migration 5 -> 6):
// nightlies(nightly_id) one per nightly directory, nightly_steps(nightly_id, step) what each step
// did, so a re-run with --resume skips what is done.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/host/store/sqlite.h"

namespace k3store {

struct NightlyRow {
  std::string nightly_id, profile, dir, started_at, status;
  std::optional<int> exit_code;
  std::string host_build_hash, verdict_run_uuid;
  std::string host_revision;     // read only: the host build's source revision ("" when unknown)
  std::string finished_at = {};  // read only: "" while running
};

struct NightlyStepRow {
  std::string nightly_id, step;
  int seq = 0;         // position in the profile's step list
  std::string status;  // running | done | failed
  std::string command;
  std::optional<int> exit_code;  // none: not finished
  std::string started_at, finished_at;
  std::optional<double> wall_s;
  std::string detail_json;  // "" when none
};

void begin_nightly(Connection& c, const NightlyRow& row);  // insert, or mark running
void finish_nightly(Connection& c, const std::string& id, const std::string& status, int exit_code,
                    const std::string& host_hash, const std::string& verdict_run);
// The finished nightlies (ok or regression) other than `id` that recorded a host build, newest
// first, with their build's source revision (revision_ancestry.h chooses among them).
std::vector<NightlyRow> earlier_nightlies(Connection& c, const std::string& id);
// Every nightly, oldest first.
std::vector<NightlyRow> all_nightlies(Connection& c);

// `step` in the latest finished nightly (ok or regression) other than `id` in which that step was
// done: what tonight's step is compared with (e.g. yesterday's instruction counts).
std::optional<NightlyStepRow> previous_step(Connection& c, const std::string& id,
                                            const std::string& step);

// The artifacts directory of nightly `id` ("" when there is no such nightly).
std::string nightly_dir(Connection& c, const std::string& id);
// The run of the nightly's verdict ("" when it has none; nothing when there is no such nightly):
// stored with the nightly when it finishes, in the verdict step's detail while it runs.
std::optional<std::string> nightly_verdict_run(Connection& c, const std::string& id);

std::optional<NightlyStepRow> find_step(Connection& c, const std::string& id,
                                        const std::string& step);
// Every step of every nightly, by nightly and the profile's order.
std::vector<NightlyStepRow> all_nightly_steps(Connection& c);
void begin_step(Connection& c, const std::string& id, const std::string& step, int seq,
                const std::string& command);
void finish_step(Connection& c, const std::string& id, const std::string& step, bool done,
                 int exit_code, double wall_s, const std::string& detail_json);

}  // namespace k3store
