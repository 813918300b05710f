// What `k3tune publish` shows, read from the results database in one pass: every nightly with its
// steps, build and boards; every run (nightly or not); the full history of every configuration
// (target or board, op, shape; a series per parameter set and measurement settings) with its
// change points; and each tuning table's versions with what changed from one to the next.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "harness/host/store/sqlite.h"
#include "harness/host/verdict/regression_config.h"
#include "reports/trends.h"

namespace k3publish {

struct SiteRun {
  std::string run_uuid, command, target, build_hash, source_revision, started_at, status;
  bool counts = false;  // instruction counts (k3tune count), not times
  int cells_ok = 0, cells_failed = 0;
  std::set<std::string> boards;  // the targets its cells were measured on
  std::string nightly_id;        // the nightly it ran in ("" for every other run)
};

struct SiteStep {
  std::string step, status;
  std::optional<int> exit_code;
  std::optional<double> wall_s;
};

// A line a page shows beside a night, with a link into the site ("" when it has none). The
// bisections of issue 26 section 1 (once they are stored) attach here the commit they found to the
// nights whose regression they explain; see load_night_notes in site_data.cpp.
struct NightNote {
  std::string title, text, href;
};

struct SiteNight {
  std::string nightly_id, profile, started_at, finished_at, status;
  std::optional<int> exit_code;
  std::string host_build_hash, source_revision, verdict_run_uuid;
  std::vector<SiteStep> steps;    // in the profile's order
  std::vector<std::string> runs;  // the runs started while it ran, oldest first
  std::set<std::string> boards;   // the targets of those runs' cells
  std::vector<NightNote> notes;
  // The night's verdict in words, from its status, exit code and verdict steps.
  std::string verdict() const;
};

// Every configuration of one (target, op, shape): a page of the site.
struct History {
  std::string target, op, shape;               // shape as "n=2048,k=2048"
  bool counts = false;                         // instruction counts: the exact rule marks changes
  std::vector<k3reports::TrendSeries> series;  // one per configuration, most points first
  std::size_t points() const;
};

struct TableVersion {
  std::string table_id, created_at, path, nightly_id;
  int entries = 0;
  std::string diff;     // `table diff` against the previous version ("" for the first)
  bool changed = true;  // entries, gates or board differ from the previous version
};

// The versions of one table over time: the tables a nightly writes under the same file name
// (tables/local.json, tables/qemu-vlen1024.json, ...) are one table, night by night.
struct TableHistory {
  std::string name;
  std::vector<TableVersion> versions;  // oldest first
};

struct SiteData {
  std::string db_path;
  std::vector<SiteNight> nights;  // oldest first
  std::vector<SiteRun> runs;      // oldest first
  std::vector<History> histories;
  std::vector<TableHistory> tables;
};

// Reads the whole site from `db`. Change points of timed series: optimal partitioning with
// Welch's test and the op's minimum effect from `rules` (reports/change_points.h); of counts:
// a step beyond twice the larger jitter between successive runs (the exact rule of the verdict).
SiteData load_site(k3store::Connection& db, const k3verdict::RegressionConfig& rules);

}  // namespace k3publish
