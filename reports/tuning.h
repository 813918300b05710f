// Tuning sessions and selected tables for the report, read from the tables the tuner keeps in the
// results database (tuning_sessions, tuning_points, tuning_tables; formats in the project's
// contracts). When the database has no such tables (the tuner's migration has not run on it), the
// section is left out with a one-line note.
//   - landscapes: per session and shape, a heat map over the two knobs that vary most among the
//     measured points (each cell: the fastest point with those two values, as a multiple of the
//     shape's fastest point; rejected points are counted, with their reasons);
//   - tables: the selected entries with their evidence (mean, CI, speed-up over the defaults).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/verdict/run_data.h"
#include "harness/host/store/sqlite.h"

namespace k3reports {

struct TuningSession {
  std::string session_id, created_at, finished_at, command, op, model, strategy, objective, status;
  std::optional<double> budget;
  int measured = 0, rejected = 0;
};

struct HeatCell {
  std::string x, y;               // knob values (text)
  std::optional<double> mean_ns;  // fastest measured point with these two values
  double relative = 0;            // mean / the shape's fastest mean (1 = best)
  int measured = 0, rejected = 0;
  std::string rejected_reason;  // one of them
  bool best = false;
};

struct Heatmap {
  std::string session_id, op, shape, x_knob, y_knob;  // y_knob "" when one knob varies
  std::vector<std::string> x_values, y_values;        // in numeric order where numbers
  std::vector<HeatCell> cells;
  int measured = 0, rejected = 0;
};

struct TuningTable {
  std::string table_id, created_at, path;
  std::vector<std::string> sessions;  // the sessions behind its entries (sessions_json)
  nlohmann::json table;               // the tuning-table document
};

// An entry's evidence as the table format states it: `mean` and `default_mean` in `unit` ("ns per
// call", or "instructions per call" for a proxy objective), `ci95` the mean's interval, `speedup`
// over the built-in defaults with `speedup_ci95`. Absent or non-numeric fields stay empty.
struct EntryEvidence {
  std::optional<double> mean, ci_low, ci_high, default_mean, speedup, speedup_low, speedup_high;
  std::optional<int> processes;
  std::string unit;
  // The table's own word on the speed-up: measured against the defaults in enough paired rounds
  // (`conclusive`; tables without the field are taken as conclusive).
  bool conclusive = true;
  int paired_rounds = 0;
};
// Reads the evidence. Intervals the data cannot support are left empty: the mean's below three
// processes, the speed-up's when the table says the paired rounds were too few (a one-round
// "interval" has zero width).
EntryEvidence evidence_of(const nlohmann::json& entry);
// "low .. high" in the evidence's unit, or why there is no interval ("2 processes: too few for an
// interval", "1 paired round: too few for an interval").
std::string evidence_interval_text(const EntryEvidence& e);
std::string speedup_interval_text(const EntryEvidence& e, const char* open = "[",
                                  const char* close = "]");
// A value of the evidence in its unit: "12.345 us" for ns per call, "1.2e+05 instructions per
// call" for the proxy; "-" when absent.
std::string evidence_value_text(const EntryEvidence& e, const std::optional<double>& value);

struct TuningData {
  bool available = false;
  std::string note;  // why the section is absent or what it covers
  std::vector<TuningSession> sessions;
  std::vector<Heatmap> heatmaps;
  std::vector<TuningTable> tables;
};

// Sessions of the run's target created up to `until` (the newest `max_sessions`) and their tables.
TuningData load_tuning(k3store::Connection& db, const k3verdict::RunData& run, const std::string& until,
                       int max_sessions = 5);

}  // namespace k3reports
